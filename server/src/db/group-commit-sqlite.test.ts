import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { GroupCommit } from './group-commit.ts';
import type { DB } from './schema.ts';
import { DurableSqliteDialect } from './sqlite-driver.ts';

/**
 * Group commit on SQLite, statement by statement (db/group-commit.ts, docs/performance.md): a write that only
 * stages rows costs no savepoint, a write that runs statements gets its own savepoint (rolled back alone when it
 * throws), and the staged rows of a group go in as a few multi-row INSERTs, in arrival order.
 */
describe('group commit on SQLite: statements', () => {
  let dir: string | undefined;
  let db: Kysely<DB> | undefined;
  afterEach(async () => {
    await db?.destroy();
    db = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function open(sync?: (path: string) => Promise<void>) {
    dir = mkdtempSync(join(tmpdir(), 'palmid-group-sqlite-'));
    const path = join(dir, 'g.db');
    const statements: string[] = [];
    const raw = new SQLite(path, { verbose: (sql) => statements.push(String(sql)) });
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = NORMAL');
    raw.exec(
      'create table vendors (id text primary key, name text not null, url text not null, mode text not null, scopes text not null, created_at integer not null)',
    );
    const dialect = new DurableSqliteDialect(raw, `${path}-wal`, sync);
    db = new Kysely<DB>({ dialect });
    const group = new GroupCommit(db, 'sqlite', { direct: dialect.direct });
    statements.length = 0;
    return { group, statements };
  }

  const vendor = (i: number, url = '') => ({
    id: `v${String(i).padStart(3, '0')}`,
    name: `Vendor ${i}`,
    url,
    mode: 'test' as const,
    scopes: 'auth',
    created_at: i,
  });

  it('stages 70 rows of two shapes as a few multi-row INSERTs, in arrival order, with no savepoint', async () => {
    const { group, statements } = open();
    const written = await Promise.all(
      Array.from({ length: 70 }, (_, i) =>
        group.write(async (_trx, batch) => {
          // Two column orders: rows of another shape start a statement of their own.
          const { url, ...v } = vendor(i, i === 40 ? 'https://example.test/' : '');
          batch.insert('vendors', i === 40 ? { url, ...v } : { ...v, url });
          return i;
        }),
      ),
    );
    expect(written).toEqual(Array.from({ length: 70 }, (_, i) => i));
    expect(group.transactions).toBe(1);
    const inserts = statements.filter((s) => /^insert/i.test(s));
    // 0–39 (16+16+4+4), 40 alone, 41–69 (16+4+4+4+1): 10 statements for 70 rows.
    expect(inserts).toHaveLength(10);
    expect(statements.filter((s) => /savepoint/i.test(s))).toEqual([]);
    const rows = await db!.selectFrom('vendors').selectAll().orderBy('created_at').execute();
    expect(rows).toEqual(
      Array.from({ length: 70 }, (_, i) => vendor(i, i === 40 ? 'https://example.test/' : '')),
    );
    // Arrival order is insertion order.
    const byRowid = await db!
      .selectFrom('vendors')
      .select('created_at')
      .orderBy(db!.dynamic.ref('rowid'))
      .execute();
    expect(byRowid.map((r) => r.created_at)).toEqual(Array.from({ length: 70 }, (_, i) => i));
  });

  it('a write that runs statements gets a savepoint; one that throws after writing is rolled back alone', async () => {
    const { group, statements } = open();
    const results = await Promise.allSettled([
      group.write(async (trx) => {
        await trx.insertInto('vendors').values(vendor(1)).execute();
        return 1;
      }),
      group.write(async (trx) => {
        await trx.insertInto('vendors').values(vendor(2)).execute();
        throw new Error('refused after writing');
      }),
      group.write(async (_trx, batch) => {
        batch.insert('vendors', vendor(3));
        return 3;
      }),
      group.write(async () => {
        throw new Error('refused before any statement');
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
    expect(group.transactions).toBe(1);
    const ids = (await db!.selectFrom('vendors').select('id').orderBy('id').execute()).map((r) => r.id);
    expect(ids).toEqual(['v001', 'v003']);
    const savepoints = statements.filter((s) => /savepoint/i.test(s));
    expect(savepoints).toEqual([
      'savepoint group_job',
      'release savepoint group_job',
      'savepoint group_job',
      'rollback to savepoint group_job',
      'release savepoint group_job',
    ]);
  });

  it('no group commits while an fsync is in flight: the writes that arrive meanwhile share the next commit', async () => {
    const fsyncs: (() => void)[] = [];
    let released = false;
    const { group } = open((_path) =>
      released ? Promise.resolve() : new Promise<void>((resolve) => fsyncs.push(resolve)),
    );
    const tick = () => new Promise((r) => setImmediate(r));
    const settled: number[] = [];
    const write = (i: number) =>
      group
        .write(async (_trx, batch) => {
          batch.insert('vendors', vendor(i));
          return i;
        })
        .then((v) => settled.push(v));
    try {
      await ordered();
    } finally {
      // A failed expectation must not leave the driver waiting for an fsync.
      released = true;
      for (const done of fsyncs) done();
    }
    async function ordered() {
      const first = write(0);
      for (let k = 0; k < 10 && fsyncs.length === 0; k++) await tick();
      expect(fsyncs).toHaveLength(1);
      const rest = [1, 2, 3, 4].map(write);
      for (let k = 0; k < 10; k++) await tick();
      // Committed and waiting for its fsync: nothing answered, and the later writes have not committed.
      expect(group.transactions).toBe(1);
      expect(fsyncs).toHaveLength(1);
      expect(settled).toEqual([]);
      fsyncs[0]!();
      await first;
      for (let k = 0; k < 10 && fsyncs.length < 2; k++) await tick();
      expect(group.transactions).toBe(2);
      expect(fsyncs).toHaveLength(2);
      expect(settled).toEqual([0]);
      fsyncs[1]!();
      await Promise.all(rest);
      expect(settled).toEqual([0, 1, 2, 3, 4]);
      expect(group.transactions).toBe(2);
    }
  });

  it('a staged row that fails its insert fails that write alone, after the group is rolled back', async () => {
    const { group } = open();
    const results = await Promise.allSettled([
      group.write(async (_trx, batch) => batch.insert('vendors', vendor(7))),
      group.write(async (_trx, batch) => batch.insert('vendors', vendor(7))), // same primary key
      group.write(async (_trx, batch) => batch.insert('vendors', vendor(8))),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const ids = (await db!.selectFrom('vendors').select('id').orderBy('id').execute()).map((r) => r.id);
    expect(ids).toEqual(['v007', 'v008']);
  });
});
