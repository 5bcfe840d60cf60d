import type { AppContext } from './context.ts';
import { createUser, issueUserToken } from './modules/users/service.ts';
import { createVendor, rotateKey } from './modules/vendors/service.ts';

const DEMO_VENDOR = 'Demo Shop';

/**
 * Development only: a demo vendor and a demo user. Keys are stored hashed, so the demo key is rotated at
 * every start to be printable; the demo user gets a fresh token.
 */
export async function seedDemo(ctx: AppContext) {
  const db = ctx.database.db;
  return db.transaction().execute(async (trx) => {
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
    const userId = demoUser?.id ?? (await createUser(ctx, trx, vendor.vendor_id)).id;
    const token = await issueUserToken(ctx, trx, userId);
    return { vendorId: vendor.vendor_id, apiKey: vendor.api_key, userId, userToken: token.user_token };
  });
}
