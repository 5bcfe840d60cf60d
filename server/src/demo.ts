import type { AppContext } from './context.ts';
import { writeAttribute } from './modules/attributes/service.ts';
import { grantConsent } from './modules/consents/service.ts';
import { createPvs } from './modules/pvs/service.ts';
import { addPalm, createUser, dataKeyOf, issueUserToken, palmsOf } from './modules/users/service.ts';
import { createVendor, rotateKey } from './modules/vendors/service.ts';

const DEMO_VENDOR = 'Demo Shop';
const DEMO_KIOSK = 'demo-kiosk';
/** The simulated kiosk presents this synthetic identity; the demo user is enrolled with it. */
export const DEMO_IDENTITY = 'demo';

export interface Demo {
  vendorId: string;
  apiKey: string;
  userId: string;
  userToken: string;
  pvsId: string;
  deviceToken: string;
  provisioningSecret: string;
}

/**
 * Templates of the demo palm, made the way a kiosk would: synthetic NIR frames through the agent's
 * pipeline. Only the development demo does this in the server process.
 */
async function demoTemplates(): Promise<{ hand: 'left' | 'right'; template: Uint8Array }[]> {
  const { renderPalm } = await import('@palmid/firmware-sim/synth/index.ts');
  const { processCapture } = await import('@palmid/agent/palm/pipeline.ts');
  const out: { hand: 'left' | 'right'; template: Uint8Array }[] = [];
  for (let capture = 1000; capture < 1010 && out.length < 2; capture++) {
    const frame = await renderPalm({ identity: DEMO_IDENTITY, hand: 'right', capture });
    const p = await processCapture(frame);
    if (p.ok) out.push({ hand: 'right', template: p.template });
  }
  return out;
}

/**
 * Development only: a demo vendor, a demo user (with attributes, a consent for the demo vendor and an
 * enrolled palm) and a demo kiosk. Secrets are stored hashed, so the vendor key and the kiosk token are
 * rotated at every start to be printable.
 */
export async function seedDemo(ctx: AppContext): Promise<Demo> {
  const db = ctx.database.db;
  const templates = await demoTemplates();
  const { demo, added } = await db.transaction().execute(async (trx) => {
    const now = ctx.now();
    const existing = await trx
      .selectFrom('vendors')
      .select('id')
      .where('name', '=', DEMO_VENDOR)
      .executeTakeFirst();
    const vendor = existing
      ? { vendor_id: existing.id, api_key: (await rotateKey(trx, existing.id)).api_key }
      : await createVendor(trx, { name: DEMO_VENDOR, url: 'https://demo-shop.example', mode: 'test' });
    const demoUser = await trx
      .selectFrom('users')
      .select('id')
      .where('created_by_vendor', '=', vendor.vendor_id)
      .where('erased_at', 'is', null)
      .orderBy('registration_date')
      .executeTakeFirst();
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
        added.push({ ...t, userId, palmId: await addPalm(ctx, trx, userId, key, t) });
    }
    await trx
      .updateTable('pvs')
      .set({ revoked_at: now })
      .where('name', '=', DEMO_KIOSK)
      .where('revoked_at', 'is', null)
      .execute();
    const kiosk = await createPvs(trx, { name: DEMO_KIOSK });
    const token = await issueUserToken(ctx, trx, userId);
    return {
      demo: {
        vendorId: vendor.vendor_id,
        apiKey: vendor.api_key,
        userId,
        userToken: token.user_token,
        pvsId: kiosk.pvs_id,
        deviceToken: kiosk.device_token,
        provisioningSecret: kiosk.provisioning_secret,
      },
      added,
    };
  });
  for (const p of added) ctx.gallery.add(p);
  return demo;
}
