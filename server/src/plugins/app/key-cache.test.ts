import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';
import { openDatabase } from '../../db/index.ts';
import { revokeKeys, rotateKey } from '../../modules/vendors/service.ts';

/**
 * The verified-key cache on SQLite: a revocation committed by another connection to the file (the admin CLI,
 * another process) or by this process itself is honoured on the very next request.
 */
describe('verified-key cache (SQLite)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const status = (key: string) =>
    t.app.inject({ method: 'GET', url: '/api/v1/status', headers: { 'x-api-key': key } });

  it('answers a known key from memory, and refuses it right after another connection revoked it', async () => {
    const v = await seedVendor(t.ctx, 'Cached');
    expect((await status(v.api_key)).statusCode).toBe(200);
    const cached = t.app.verifiedKeys.size;
    expect(cached).toBeGreaterThan(0);
    expect((await status(v.api_key)).statusCode).toBe(200);
    expect(t.app.verifiedKeys.size).toBe(cached);

    const other = await openDatabase(t.ctx.config.DATABASE_URL);
    try {
      expect((await revokeKeys(other.db, v.vendor_id)).revoked).toBe(1);
    } finally {
      await other.close();
    }
    const r = await status(v.api_key);
    expect(r.statusCode).toBe(401);
    expect(r.json().error.code).toBe('UNAUTHORIZED');
  });

  it('refuses the old key right after a rotation in this process, and accepts the new one', async () => {
    const v = await seedVendor(t.ctx, 'Rotated here');
    expect((await status(v.api_key)).statusCode).toBe(200);
    const { api_key } = await rotateKey(t.ctx.database.db, v.vendor_id);
    expect((await status(v.api_key)).statusCode).toBe(401);
    expect((await status(api_key)).statusCode).toBe(200);
  });

  it('never caches a refusal: an unknown key is looked up (and counted) every time', async () => {
    const bogus = `sk_test_${'A'.repeat(43)}`;
    const size = t.app.verifiedKeys.size;
    for (let i = 0; i < 3; i++) expect((await status(bogus)).statusCode).toBe(401);
    expect(t.app.verifiedKeys.size).toBe(size);
  });
});
