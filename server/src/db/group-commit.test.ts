import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../../../test/support/postgres.ts';
import { describeNeeding } from '../../../test/support/requirements.ts';
import { Keyring } from '../crypto/keyring.ts';
import { appendAudit, verifyAuditChain } from '../modules/audit/service.ts';
import { type Database, openDatabase } from './index.ts';

/**
 * Group commit (db/group-commit.ts) through `Database.write`: concurrent writes share commits, keep their
 * arrival order in the audit chain, fail alone, and are committed when their promise resolves.
 */
const keyring = new Keyring(Buffer.alloc(32, 7));
const caller = { ip: '127.0.0.1', userAgent: 'group-commit-test' };

function contract(name: string, open: () => Promise<{ db: Database; reopen: () => Promise<Database> }>) {
  describe(name, () => {
    let db: Database;
    let reopen: () => Promise<Database>;
    beforeAll(async () => {
      ({ db, reopen } = await open());
    }, 60_000);
    afterAll(() => db?.close());

    const audited = (tag: string, i: number) =>
      db.write(async (trx) => {
        await appendAudit(trx, keyring, caller, [
          { userId: `${tag}-${i}`, attributeName: 'name', operation: 'READ', result: 'SUCCESS' },
        ]);
        return i;
      });

    it('many concurrent writes: all answered, fewer commits than writes, chain in arrival order and valid', async () => {
      const before = db.commits();
      const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => audited('order', i)));
      expect(answers).toEqual(Array.from({ length: 60 }, (_, i) => i));
      const commits = db.commits() - before;
      expect(commits).toBeGreaterThan(0);
      expect(commits).toBeLessThan(60);
      const rows = await db.db
        .selectFrom('audit')
        .select(['seq', 'user_id'])
        .where('user_id', 'like', 'order-%')
        .orderBy('seq')
        .execute();
      expect(rows.map((r) => r.user_id)).toEqual(Array.from({ length: 60 }, (_, i) => `order-${i}`));
      const check = await verifyAuditChain(db.db, keyring);
      expect(check.problems).toEqual([]);
      expect(check.ok).toBe(true);
    });

    it('a failing write is refused alone; the writes around it commit and the chain verifies', async () => {
      const results = await Promise.allSettled([
        audited('mixed', 0),
        db.write(async (trx) => {
          await appendAudit(trx, keyring, caller, [
            { userId: 'mixed-bad', attributeName: 'name', operation: 'READ', result: 'SUCCESS' },
          ]);
          throw new Error('refused by the job');
        }),
        audited('mixed', 2),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason.message).toBe('refused by the job');
      const users = (
        await db.db
          .selectFrom('audit')
          .select('user_id')
          .where('user_id', 'like', 'mixed-%')
          .orderBy('seq')
          .execute()
      ).map((r) => r.user_id);
      expect(users).toEqual(['mixed-0', 'mixed-2']);
      expect((await verifyAuditChain(db.db, keyring)).ok).toBe(true);
    });

    it('staged rows of two column orders, in groups of several sizes, are all stored in arrival order', async () => {
      const tag = randomUUID().slice(0, 8);
      const stage = (i: number) =>
        db.write(async (_trx, batch) => {
          const v = {
            id: `${tag}-${String(i).padStart(2, '0')}`,
            name: `Staged ${i}`,
            url: '',
            mode: 'test' as const,
          };
          // Every third row names its columns in another order: a statement of its own shape.
          batch.insert(
            'vendors',
            i % 3 === 0 ? { scopes: 'auth', created_at: i, ...v } : { ...v, scopes: 'auth', created_at: i },
          );
          return i;
        });
      const sizes = [5, 3, 5, 1];
      let next = 0;
      for (const size of sizes) {
        const wave = Array.from({ length: size }, () => stage(next++));
        expect(await Promise.all(wave)).toEqual(Array.from({ length: size }, (_, k) => next - size + k));
      }
      const rows = await db.db
        .selectFrom('vendors')
        .select(['id', 'name', 'created_at'])
        .where('id', 'like', `${tag}-%`)
        .orderBy('created_at')
        .execute();
      expect(rows).toEqual(
        Array.from({ length: next }, (_, i) => ({
          id: `${tag}-${String(i).padStart(2, '0')}`,
          name: `Staged ${i}`,
          created_at: i,
        })),
      );
    });

    it('a resolved write is durable: another connection opened afterwards reads it', async () => {
      const id = randomUUID();
      await db.write((trx) =>
        trx
          .insertInto('vendors')
          .values({ id, name: 'Durable', url: '', mode: 'test', scopes: 'auth', created_at: 1 })
          .execute(),
      );
      const other = await reopen();
      try {
        const row = await other.db
          .selectFrom('vendors')
          .select('name')
          .where('id', '=', id)
          .executeTakeFirst();
        expect(row?.name).toBe('Durable');
      } finally {
        await other.close();
      }
    });
  });
}

contract('group commit on SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-group-'));
  const url = `sqlite:${join(dir, 'g.db')}`;
  const db = await openDatabase(url);
  const close = db.close;
  db.close = async () => {
    await close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { db, reopen: () => openDatabase(url) };
});

describeNeeding(postgresUnavailable())('PostgreSQL', () => {
  let pg: TestPostgres | undefined;
  afterAll(() => pg?.stop());
  contract('group commit on PostgreSQL', async () => {
    pg = await startPostgres({ durable: true });
    const url = await pg.createDatabase('group_commit');
    return { db: await openDatabase(url), reopen: () => openDatabase(url) };
  });

  it('a group of staged rows runs its INSERT as a statement prepared once on the connection', async () => {
    const db = await openDatabase(await (pg as TestPostgres).createDatabase('group_commit_named'));
    try {
      const stage = (tag: string, i: number) =>
        db.write(async (_trx, batch) =>
          batch.insert('vendors', {
            id: `${tag}-${i}`,
            name: 'N',
            url: '',
            mode: 'test',
            scopes: 'auth',
            created_at: i,
          }),
        );
      await Promise.all([0, 1, 2].map((i) => stage('first', i)));
      await Promise.all([0, 1, 2].map((i) => stage('second', i)));
      // The connection the groups used (the pool hands out the one released last).
      const prepared = await db.write(
        async (trx) =>
          (
            await sql<{
              name: string;
              statement: string;
            }>`select name, statement from pg_prepared_statements`.execute(trx)
          ).rows,
      );
      const inserts = prepared.filter((p) => /^insert into "vendors"/.test(p.statement));
      expect(inserts).toHaveLength(1);
      expect(inserts[0]!.name).toMatch(/^palmid_\d+$/);
      const ids = await db.db
        .selectFrom('vendors')
        .select('id')
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      expect(ids.map((r) => r.id)).toEqual([
        'first-0',
        'second-0',
        'first-1',
        'second-1',
        'first-2',
        'second-2',
      ]);
    } finally {
      await db.close();
    }
  });
});
