import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { redisUnavailable, startRedis, type TestRedis } from '../../../../test/support/redis.ts';
import { describeNeeding } from '../../../../test/support/requirements.ts';
import { createTestApp, type TestApp } from '../../../dev/testing.ts';
import { KioskLockout, LOCK_MS, MAX_FAILURES, WINDOW_MS } from './service.ts';

/**
 * The lock is stored, not remembered: another instance (or the same one after a restart) sees it. The
 * failures are counted by rate-limiter-flexible (Redis-backed when REDIS_URL is set).
 */
describe('kiosk lockout', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const attempt = async (l: KioskLockout, pvs: string, failed: boolean, now: number) => {
    const wait = await l.admit(pvs, now);
    if (wait === 0) await l.settle(pvs, failed, now);
    return wait;
  };

  it(`locks after ${MAX_FAILURES} failures in the window, for every instance on the store`, async () => {
    const a = new KioskLockout(t.ctx.database.db);
    const now = 1_000_000;
    for (let i = 0; i < MAX_FAILURES; i++) expect(await attempt(a, 'k1', true, now + i)).toBe(0);
    const b = new KioskLockout(t.ctx.database.db); // another instance, or this one restarted
    expect(await b.admit('k1', now + 10)).toBe(LOCK_MS - 10 + MAX_FAILURES - 1);
    expect(await b.lockedFor('k1', now + LOCK_MS + MAX_FAILURES)).toBe(0);
    expect(await attempt(b, 'k1', true, now + LOCK_MS + MAX_FAILURES)).toBe(0);
    // other kiosks are not affected
    expect(await b.admit('k2', now)).toBe(0);
    await b.settle('k2', undefined, now);
  });

  it('failures outside the window and a success in between reset the count', async () => {
    // The failure window is rate-limiter-flexible's, on the system clock: move it with `now`.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const l = new KioskLockout(t.ctx.database.db);
      let now = 5_000_000;
      vi.setSystemTime(now);
      for (let i = 0; i < MAX_FAILURES - 1; i++) await attempt(l, 'k3', true, now);
      now += WINDOW_MS + 1;
      vi.setSystemTime(now);
      for (let i = 0; i < MAX_FAILURES - 1; i++) expect(await attempt(l, 'k3', true, now)).toBe(0);
      await attempt(l, 'k3', false, now);
      for (let i = 0; i < MAX_FAILURES - 1; i++) expect(await attempt(l, 'k3', true, now)).toBe(0);
      expect(await l.lockedFor('k3', now)).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('parallel attempts cannot slip past the limit', async () => {
    const l = new KioskLockout(t.ctx.database.db);
    const now = 9_000_000;
    const waits = await Promise.all(Array.from({ length: 20 }, () => l.admit('k4', now)));
    expect(waits.filter((w) => w === 0)).toHaveLength(MAX_FAILURES);
    await Promise.all(waits.filter((w) => w === 0).map(() => l.settle('k4', true, now)));
    expect(await l.lockedFor('k4', now)).toBe(LOCK_MS);
  });
});

describeNeeding(redisUnavailable())('kiosk lockout with Redis', () => {
  let t: TestApp;
  let redis: TestRedis;
  const clients: Redis[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    t = await createTestApp();
  });
  afterAll(async () => {
    for (const c of clients) await c.quit();
    await t?.close();
    await redis?.stop();
  });

  it('instances sharing Redis count the failures together', async () => {
    const instance = async () => {
      const client = new Redis(redis.url);
      clients.push(client);
      await new Promise((ready) => client.once('ready', ready));
      return new KioskLockout(t.ctx.database.db, client);
    };
    const [a, b] = [await instance(), await instance()];
    const now = Date.now();
    for (let i = 0; i < MAX_FAILURES - 1; i++) {
      expect(await a.admit('kr', now)).toBe(0);
      await a.settle('kr', true, now);
    }
    expect(await b.admit('kr', now)).toBe(0);
    await b.settle('kr', true, now);
    expect(await a.lockedFor('kr', now)).toBe(LOCK_MS);
    expect(await b.admit('kr', now + 1)).toBe(LOCK_MS - 1);
  });
});
