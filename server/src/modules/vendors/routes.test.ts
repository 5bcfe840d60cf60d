import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, seedVendor, type TestApp } from '../../../dev/testing.ts';

describe('GET /v1/vendors', () => {
  let t: TestApp;
  let token: string;
  let vendor: { vendor_id: string; api_key: string };

  beforeAll(async () => {
    t = await createTestApp();
    vendor = await seedVendor(t.ctx, 'Cafe X');
    token = (await seedUser(t.ctx)).token;
  });
  afterAll(() => t.close());

  it('lists vendor display names to a signed-in user, never keys', async () => {
    const res = await t.app.inject({ url: '/v1/vendors', headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.vendors).toContainEqual({
      vendor_id: vendor.vendor_id,
      name: 'Cafe X',
      url: 'https://cafe-x.example',
    });
    expect(res.body).not.toContain('sk_test_');
    expect(res.headers['x-ratelimit-limit']).toBeDefined();
  });

  it('returns one vendor by id, 404 for an unknown one, 401 without a token', async () => {
    const auth = { authorization: `Bearer ${token}` };
    const one = await t.app.inject({ url: `/v1/vendors/${vendor.vendor_id}`, headers: auth });
    expect(one.json().data).toMatchObject({ vendor_id: vendor.vendor_id, name: 'Cafe X' });
    const missing = await t.app.inject({ url: `/v1/vendors/${crypto.randomUUID()}`, headers: auth });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toMatchObject({ code: 'NOT_FOUND', details: { field: 'vendor_id' } });
    const anon = await t.app.inject({ url: '/v1/vendors' });
    expect(anon.statusCode).toBe(401);
  });
});
