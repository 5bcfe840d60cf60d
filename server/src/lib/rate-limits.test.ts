import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, seedVendor, type TestApp } from '../testing.ts';
import { RATE_LIMITS, RateLimits } from './rate-limits.ts';

describe('RateLimits', () => {
  it('reports the window closest to exhaustion and refuses when any window is spent', async () => {
    const rl = new RateLimits(undefined, {
      ...RATE_LIMITS,
      ledger: [
        { points: 5, duration: 60 },
        { points: 3, duration: 3600 },
      ],
    });
    const first = await rl.consume('ledger', 'k');
    expect(first).toMatchObject({ limit: 3, remaining: 2, allowed: true });
    await rl.consume('ledger', 'k');
    await rl.consume('ledger', 'k');
    const refused = await rl.consume('ledger', 'k');
    expect(refused).toMatchObject({ limit: 3, remaining: 0, allowed: false });
    expect(refused.retryAfterS).toBeGreaterThan(60);
    // another key has its own budget
    expect((await rl.consume('ledger', 'other')).allowed).toBe(true);
  });
});

describe('rate limited routes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('auth routes: 100 per minute per key, then 429 RATE_LIMITED with Retry-After', async () => {
    const v = await seedVendor(t.ctx, 'Busy');
    const other = await seedVendor(t.ctx, 'Calm');
    let last = 0;
    for (let i = 0; i < 100; i++) {
      const r = await t.app.inject({
        method: 'GET',
        url: '/api/v1/auth/00000000-0000-4000-8000-000000000000/status',
        headers: { 'x-api-key': v.api_key },
      });
      expect(r.statusCode).toBe(404);
      last = Number(r.headers['x-ratelimit-remaining']);
    }
    expect(last).toBe(0);
    const r = await t.app.inject({
      method: 'GET',
      url: '/api/v1/auth/00000000-0000-4000-8000-000000000000/status',
      headers: { 'x-api-key': v.api_key },
    });
    expect(r.statusCode).toBe(429);
    expect(r.json().error.code).toBe('RATE_LIMITED');
    expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    expect(r.headers['x-ratelimit-limit']).toBe('100');
    expect(Number(r.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
    const o = await t.app.inject({
      method: 'GET',
      url: '/api/v1/auth/00000000-0000-4000-8000-000000000000/status',
      headers: { 'x-api-key': other.api_key },
    });
    expect(o.statusCode).toBe(404);
  });

  it('user routes count per token', async () => {
    const u = await seedUser(t.ctx);
    const r = await t.app.inject({
      method: 'GET',
      url: '/v1/audit',
      headers: { authorization: `Bearer ${u.token}` },
    });
    expect(r.headers['x-ratelimit-limit']).toBe('60');
  });
});
