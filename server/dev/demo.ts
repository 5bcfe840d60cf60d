import type { AppContext } from '../src/context.ts';
import { writeAttribute } from '../src/modules/attributes/service.ts';
import { grantConsent } from '../src/modules/consents/service.ts';
import { createPvs, revokePvsNamed } from '../src/modules/pvs/service.ts';
import {
  addPalm,
  createUser,
  dataKeyOf,
  firstUserCreatedBy,
  issueUserToken,
  palmsOf,
  vendorUserId,
} from '../src/modules/users/service.ts';
import { createVendor, ensureKey, findVendorByName } from '../src/modules/vendors/service.ts';
import { DEMO_LEFT_PALM_TEMPLATES, DEMO_PALM_TEMPLATES } from './demo-palm.ts';

const DEMO_VENDOR = 'Demo Shop';
const DEMO_KIOSK = 'demo-kiosk';
/** The simulated kiosk presents this synthetic identity; the demo user is enrolled with it. */
export const DEMO_IDENTITY = 'demo';

export interface Demo {
  vendorId: string;
  apiKey: string;
  /** the demo user's internal id (what the user sees) */
  userId: string;
  /** the demo vendor's id for the demo user (what `mpc/users/*` take; docs/vendor-api.md "User ids") */
  vendorUserId: string;
  userToken: string;
  pvsId: string;
  deviceToken: string;
  provisioningSecret: string;
  /**
   * `kept`: the key of earlier starts (same database and master key); `restored`: the same, after an
   * `admin vendor rotate-key` (whose key stops working); `new`: a key earlier starts did not print;
   * `created`: the demo vendor is new.
   */
  apiKeyState: 'kept' | 'restored' | 'new' | 'created';
}

/**
 * The demo vendor's key, derived from the master key: the same on every start with the same database and
 * master key, so a developer's scripts keep working across restarts (docs/quickstart.md). Development only.
 */
export function demoVendorKey(ctx: AppContext, vendorId: string): string {
  return `sk_test_${ctx.keyring.derive(`demo-vendor-key:${vendorId}`).toString('base64url')}`;
}

/** The demo palm: a committed synthetic fixture (demo-palm.ts), the identity the simulated kiosk presents. */
function demoTemplates(): { hand: 'left' | 'right'; template: Uint8Array }[] {
  const of = (hand: 'left' | 'right') => (b64: string) => ({
    hand,
    template: new Uint8Array(Buffer.from(b64, 'base64')),
  });
  return [...DEMO_PALM_TEMPLATES.map(of('right')), ...DEMO_LEFT_PALM_TEMPLATES.map(of('left'))];
}

/**
 * Development only: a demo vendor, a demo user (with attributes, a consent for the demo vendor and an
 * enrolled palm) and a demo kiosk. Secrets are stored hashed; the vendor key is derived from the master key
 * (stable across restarts, see demoVendorKey), the kiosk token is rotated at every start to be printable.
 */
export async function seedDemo(ctx: AppContext): Promise<Demo> {
  const db = ctx.database.db;
  const templates = demoTemplates();
  const { demo, added } = await db.transaction().execute(async (trx) => {
    const now = ctx.now();
    const existing = await findVendorByName(trx, DEMO_VENDOR);
    const vendorId =
      existing?.id ??
      (await createVendor(trx, { name: DEMO_VENDOR, url: 'https://demo-shop.example', mode: 'test' }))
        .vendor_id;
    const apiKey = demoVendorKey(ctx, vendorId);
    const { outcome } = await ensureKey(trx, vendorId, apiKey, now);
    const vendor = { vendor_id: vendorId, api_key: apiKey, state: existing ? outcome : ('created' as const) };
    const demoUser = await firstUserCreatedBy(trx, vendor.vendor_id);
    const added: { palmId: string; userId: string; hand: 'left' | 'right'; template: Uint8Array }[] = [];
    let userId = demoUser?.id;
    if (!userId) {
      userId = (await createUser(ctx, trx, vendor.vendor_id)).id;
      for (const [name, value] of [
        ['email', 'demo@example.com'],
        ['date_of_birth', '1990-04-01'],
        ['postal_code', '10115'],
      ] as const) {
        await writeAttribute(ctx, trx, userId, { name, value }, 'user', now);
      }
      await grantConsent(
        trx,
        userId,
        {
          vendor_id: vendor.vendor_id,
          attributes: [
            { name: 'email', purpose: 'e-mail receipts', retention_days: 30 },
            { name: 'age_over_18', purpose: 'age check at the door', retention_days: 0 },
          ],
        },
        now,
      );
    }
    if ((await palmsOf(trx, userId)).length === 0) {
      const key = await dataKeyOf(ctx, trx, userId);
      for (const t of templates)
        added.push({
          ...t,
          userId,
          palmId: await addPalm(ctx, trx, userId, key, t, `vendor:${vendor.vendor_id}`),
        });
    }
    await revokePvsNamed(trx, DEMO_KIOSK, now);
    const kiosk = await createPvs(trx, { name: DEMO_KIOSK });
    const token = await issueUserToken(ctx, trx, userId);
    const scoped = await vendorUserId(trx, vendor.vendor_id, userId, now);
    return {
      demo: {
        vendorId: vendor.vendor_id,
        apiKey: vendor.api_key,
        userId,
        vendorUserId: scoped,
        userToken: token.user_token,
        pvsId: kiosk.pvs_id,
        deviceToken: kiosk.device_token,
        provisioningSecret: kiosk.provisioning_secret,
        apiKeyState: vendor.state,
      },
      added,
    };
  });
  for (const p of added) ctx.gallery.add(p);
  return demo;
}
