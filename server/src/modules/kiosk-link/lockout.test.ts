import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing.ts';
import { KioskLockout, LOCK_MS, MAX_FAILURES, WINDOW_MS } from './lockout.ts';

/** The lock is stored, not remembered: another instance (or the same one after a restart) sees it. */
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
    const l = new KioskLockout(t.ctx.database.db);
    let now = 5_000_000;
    for (let i = 0; i < MAX_FAILURES - 1; i++) await attempt(l, 'k3', true, now);
    now += WINDOW_MS + 1;
    for (let i = 0; i < MAX_FAILURES - 1; i++) expect(await attempt(l, 'k3', true, now)).toBe(0);
    await attempt(l, 'k3', false, now);
    for (let i = 0; i < MAX_FAILURES - 1; i++) expect(await attempt(l, 'k3', true, now)).toBe(0);
    expect(await l.lockedFor('k3', now)).toBe(0);
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
