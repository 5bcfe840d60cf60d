import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, seedVendor, type TestApp } from '../../dev/testing.ts';
import { MemoryWindow, RATE_LIMITS, RateLimits } from './rate-limits.ts';

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

describe('MemoryWindow (in-memory counts, answered synchronously)', () => {
  it('counts a fixed window from the first request, refuses past the limit, and starts over when it ends', () => {
    const w = new MemoryWindow(3, 60);
    const t0 = 1_700_000_000_500;
    const first = w.consume('k', t0);
    expect(first).toMatchObject({
      limit: 3,
      remaining: 2,
      allowed: true,
      resetAt: Math.ceil((t0 + 60_000) / 1000),
    });
    expect(first.resetText).toBe(String(first.resetAt));
    expect(first.limitText).toBe(String(first.limit));
    expect(w.consume('k', t0 + 10_000)).toMatchObject({
      remaining: 1,
      allowed: true,
      resetAt: first.resetAt,
    });
    expect(w.consume('k', t0 + 20_000)).toMatchObject({ remaining: 0, allowed: true });
    const refused = w.consume('k', t0 + 30_000);
    expect(refused).toMatchObject({ remaining: 0, allowed: false, retryAfterS: 30 });
    expect(w.peek('k', t0 + 30_000)).toEqual({ consumedPoints: 4, msBeforeNext: 30_000 });
    expect(w.consume('other', t0 + 30_000).allowed).toBe(true);
    // the window ends 60 s after its first request: a new one starts with the next request
    expect(w.peek('k', t0 + 60_000)).toBeUndefined();
    const next = w.consume('k', t0 + 60_000);
    expect(next).toMatchObject({ remaining: 2, allowed: true, resetAt: Math.ceil((t0 + 120_000) / 1000) });
  });

  it('consumeNow and consume count in the same windows; consumeNow defers to consume with Redis', async () => {
    const rl = new RateLimits(undefined, { ...RATE_LIMITS, status: [{ points: 2, duration: 60 }] });
    expect(rl.consumeNow('status', 'k')).toMatchObject({ remaining: 1, allowed: true });
    expect(await rl.consume('status', 'k')).toMatchObject({ remaining: 0, allowed: true });
    expect(rl.consumeNow('status', 'k')).toMatchObject({ allowed: false });
    expect(await rl.blockedFor('status', 'k')).toBeGreaterThan(0);
    const redisLike = { status: 'ready', defineCommand() {}, rlflxIncr() {} };
    const shared = new RateLimits(redisLike, RATE_LIMITS);
    expect(shared.consumeNow('status', 'k')).toBeUndefined();
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
