import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';

/**
 * The per-route authentication hook (plugins/app/auth.ts): bound when each route is added, it must guard the
 * HEAD routes Fastify adds for GET routes, and a key answered from the verified-key cache is still counted
 * by the rate limit and checked for its scope.
 */
describe('per-route authentication hook', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('guards the HEAD route of an authenticated GET route like the GET itself', async () => {
    const v = await seedVendor(t.ctx, 'Head');
    const none = await t.app.inject({ method: 'HEAD', url: '/api/v1/status' });
    expect(none.statusCode).toBe(401);
    const bad = await t.app.inject({
      method: 'HEAD',
      url: '/api/v1/status',
      headers: { 'x-api-key': `sk_test_${'B'.repeat(43)}` },
    });
    expect(bad.statusCode).toBe(401);
    const good = await t.app.inject({
      method: 'HEAD',
      url: '/api/v1/status',
      headers: { 'x-api-key': v.api_key },
    });
    expect(good.statusCode).toBe(200);
    expect(good.headers['x-ratelimit-limit']).toBe('100');
  });

  it('counts every cached request against the rate limit, and refuses past it', async () => {
    const v = await seedVendor(t.ctx, 'Counted');
    const get = () =>
      t.app.inject({ method: 'GET', url: '/api/v1/status', headers: { 'x-api-key': v.api_key } });
    const first = await get();
    expect(first.statusCode).toBe(200);
    expect(t.app.verifiedKeys.size).toBeGreaterThan(0);
    let remaining = Number(first.headers['x-ratelimit-remaining']);
    expect(remaining).toBe(99);
    for (let i = 0; i < 99; i++) {
      const r = await get();
      expect(r.statusCode).toBe(200);
      expect(Number(r.headers['x-ratelimit-remaining'])).toBe(remaining - 1);
      remaining -= 1;
    }
    const refused = await get();
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error.details.reason).toBe('rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('refuses a cached key without the route scope after counting it', async () => {
    const v = await seedVendor(t.ctx, 'Users only', ['users']);
    const get = () =>
      t.app.inject({ method: 'GET', url: '/api/v1/status', headers: { 'x-api-key': v.api_key } });
    const first = await get();
    expect(first.statusCode).toBe(403);
    expect(first.json().error.details).toEqual({ reason: 'missing_scope', scope: 'auth' });
    const second = await get();
    expect(second.statusCode).toBe(403);
    expect(Number(second.headers['x-ratelimit-remaining'])).toBe(
      Number(first.headers['x-ratelimit-remaining']) - 1,
    );
  });

  it('leaves routes without auth or rate limit unhooked and answers them', async () => {
    const r = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(r.statusCode).toBe(200);
    expect(r.headers['x-ratelimit-limit']).toBeUndefined();
    expect(r.headers['x-request-id']).toBeTypeOf('string');
  });
});
