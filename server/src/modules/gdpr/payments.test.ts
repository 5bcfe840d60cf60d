import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attestPalms, createTestApp, seedVendor, type TestApp, vendorDevice } from '../../../dev/testing.ts';

const TEMPLATE = Buffer.from('payments-route-test-palm-0001').toString('base64');

describe('GET /v1/payments', () => {
  let t: TestApp;
  let shop: { vendor_id: string; api_key: string };
  let user: { user_id: string; user_token: string };
  const pay = async (auth_context: Record<string, unknown>) =>
    (
      await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth',
        headers: { 'x-api-key': shop.api_key },
        payload: {
          auth_context,
          palm: (
            await vendorDevice(t.ctx, shop.vendor_id)
          ).direct({
            template: TEMPLATE,
            hand: 'right',
            liveness: 0.95,
          }),
        },
      })
    ).json().data;

  beforeAll(async () => {
    t = await createTestApp();
    shop = await seedVendor(t.ctx, 'Cafe X');
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/mpc/users/create',
      headers: { 'x-api-key': shop.api_key },
      payload: {
        palms: attestPalms(await vendorDevice(t.ctx, shop.vendor_id), [
          { hand: 'right' as const, template: TEMPLATE },
        ]),
      },
    });
    user = created.json().data;
  });
  afterAll(() => t.close());

  it("lists the user's payments newest first, with currency and result; entrances are not payments", async () => {
    const first = await pay({ type: 'payment', amount: 450, currency: 'EUR' });
    await pay({ type: 'entrance' });
    const second = await pay({
      type: 'payment',
      amount: 1200,
      currency: 'JPY',
      attributes_required: ['phone'],
    });
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/payments',
      headers: { authorization: `Bearer ${user.user_token}` },
    });
    expect(res.statusCode).toBe(200);
    const { payments } = res.json().data;
    expect(payments.map((p: { context_id: string }) => p.context_id)).toEqual([
      second.auth_id,
      first.auth_id,
    ]);
    expect(payments[0]).toMatchObject({
      vendor_id: shop.vendor_id,
      amount: 1200,
      currency: 'JPY',
      result: 'consent_missing',
    });
    expect(payments[1]).toMatchObject({ amount: 450, currency: 'EUR', result: 'ok' });
    const limited = await t.app.inject({
      method: 'GET',
      url: '/v1/payments?limit=1',
      headers: { authorization: `Bearer ${user.user_token}` },
    });
    expect(limited.json().data.payments).toHaveLength(1);
  });

  it('needs a user token and a sane limit', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/v1/payments' })).statusCode).toBe(401);
    const bad = await t.app.inject({
      method: 'GET',
      url: '/v1/payments?limit=0',
      headers: { authorization: `Bearer ${user.user_token}` },
    });
    expect(bad.statusCode).toBe(400);
  });
});
