import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ledgerId } from '@palmid/contracts/crypto/ids';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestApp } from '../../dev/testing.ts';
import { Keyring, seal } from '../crypto/keyring.ts';
import { createVendor } from '../modules/vendors/service.ts';
import { migrationProvider } from './migrations.ts';
import type { DB } from './schema.ts';

/**
 * Migration 0051 (docs/vendor-api.md, "User ids", Migration): a database from before vendor-scoped ids,
 * with a user its vendor created and knows by the internal id. After the upgrade the vendor's stored id
 * keeps working with `mpc/users/*`, the pseudonym does not change, and another vendor gets nothing with it.
 */
describe('migration 0051: existing vendors keep the ids they hold', () => {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-0051-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('maps each user to the id its creating vendor already holds; new pairs get fresh UUIDs', async () => {
    const path = join(dir, 'old.db');
    const master = randomBytes(32);
    const keyring = new Keyring(master);
    // the schema as it was before the second pass
    const old = new Kysely<DB>({ dialect: new SqliteDialect({ database: new SQLite(path) }) });
    const migrated = await new Migrator({ db: old, provider: migrationProvider('sqlite') }).migrateTo(
      '0011_capture_devices',
    );
    expect(migrated.error).toBeUndefined();
    const vendor = await createVendor(old, { name: 'Old Shop' });
    const other = await createVendor(old, { name: 'Other Shop' });
    const userId = randomUUID();
    const { dataKey, wrapped } = keyring.newDataKey(userId);
    const share = randomBytes(32);
    await old
      .insertInto('users')
      .values({
        id: userId,
        created_by_vendor: vendor.vendor_id,
        registration_date: Date.now(),
        ledger_id: ledgerId(share),
        token_share_enc: seal(dataKey, share, `share:${userId}`),
        wrapped_key: wrapped,
        last_auth: null,
        erased_at: null,
      } as never)
      .execute();
    await old.destroy();

    // the upgrade: the server opens the old database and migrates it
    const t = await createTestApp({
      DATABASE_URL: `sqlite:${path}`,
      PALMID_MASTER_KEY: master.toString('hex'),
    });
    try {
      const call = (key: string, op: string, body: unknown) =>
        t.app.inject({
          method: 'POST',
          url: `/api/v1/mpc/users/${op}`,
          headers: { 'x-api-key': key },
          payload: body as object,
        });
      const read = await call(vendor.api_key, 'read', { user_id: userId });
      expect(read.statusCode, read.body).toBe(200);
      expect(read.json().data.user_id).toBe(userId);
      const update = await call(vendor.api_key, 'update', { user_id: userId, attributes: { nickname: 'x' } });
      expect(update.json().data).toEqual({ user_id: userId, updated: ['nickname'] });
      // another vendor: the id means nothing to it
      expect((await call(other.api_key, 'read', { user_id: userId })).statusCode).toBe(404);
      // a user created after the upgrade gets a fresh id, not the internal one
      const created = (await call(vendor.api_key, 'create', {})).json().data;
      const internal = (
        await t.app.inject({
          method: 'GET',
          url: '/v1/attributes/user_id',
          headers: { authorization: `Bearer ${created.user_token}` },
        })
      ).json().data.value;
      expect(created.user_id).not.toBe(internal);
    } finally {
      await t.close();
    }
  });
});
