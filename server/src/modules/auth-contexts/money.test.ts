import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';

/** Money in payment contexts (docs/vendor-api.md, "Money"): ISO 4217 codes and a maximum per currency. */
describe('payment amounts and currencies', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' });
    key = (await seedVendor(t.ctx)).api_key;
  });
  afterAll(() => t.close());
  const create = (auth_context: object) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': key },
      payload: { auth_context },
    });

  it('refuses a currency that is not an ISO 4217 code, naming the field', async () => {
    for (const currency of ['XYZ', 'eur', 'EURO', 'XAU']) {
      const res = await create({ type: 'payment', amount: 100, currency });
      expect(res.statusCode, currency).toBe(400);
      expect(res.json().error.details).toEqual({
        field: 'auth_context.currency',
        reason: 'unknown_currency',
      });
      expect(res.json().error.message).toMatch(/ISO 4217/);
    }
    for (const currency of ['USD', 'JPY', 'KWD', 'CHF'])
      expect((await create({ type: 'payment', amount: 100, currency })).statusCode, currency).toBe(201);
  });

  it('takes amounts up to the documented maximum of the currency; never mentions the integer limit', async () => {
    expect((await create({ type: 'payment', amount: 99_999_999_999 })).statusCode).toBe(201);
    expect((await create({ type: 'payment', amount: 999_999_999, currency: 'JPY' })).statusCode).toBe(201);
    for (const [amount, currency, max] of [
      [100_000_000_000, 'EUR', '99999999999'],
      [1_000_000_000, 'JPY', '999999999'],
      [9_007_199_254_740_992, 'USD', '99999999999'],
      [1e300, 'EUR', '99999999999'],
    ] as const) {
      const res = await create({ type: 'payment', amount, currency });
      expect(res.statusCode, `${amount} ${currency}`).toBe(400);
      const { message, details } = res.json().error;
      expect(details).toMatchObject({ field: 'auth_context.amount', reason: 'too_big' });
      expect(message).toContain(max);
      expect(message).toContain(currency);
      expect(JSON.stringify(res.json())).not.toMatch(/9007199254740991/);
    }
    for (const amount of [0, -5, 12.5]) {
      const res = await create({ type: 'payment', amount });
      expect(res.statusCode, String(amount)).toBe(400);
      expect(res.json().error.details.field).toBe('auth_context.amount');
    }
  });

  it('OpenAPI documents the maximum', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(JSON.stringify(doc.paths['/api/v1/auth/create'])).toMatch(/EUR: 99999999999/);
  });
});
