import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../../../../test/support/postgres.ts';
import { describeNeeding } from '../../../../test/support/requirements.ts';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';

/**
 * `POST /api/v1/auth/create` under concurrency (docs/performance.md): creates that arrive together share one
 * transaction (group commit, db/group-commit.ts), their rows go in with one multi-row INSERT, and every
 * answered context is in the database. On PostgreSQL the rows' `xmin` (the id of the transaction that
 * inserted them) shows how many transactions, so how many COMMITs, carried them.
 */
const N = 40;

function contract(name: string, databaseUrl: () => Promise<string | undefined>) {
  describe(name, () => {
    let t: TestApp;
    let key: string;
    beforeAll(async () => {
      const url = await databaseUrl();
      t = await createTestApp(url ? { DATABASE_URL: url } : {});
      key = (await seedVendor(t.ctx, 'Rush Hour')).api_key;
    }, 60_000);
    afterAll(() => t?.close());

    const create = (amount: number, extra: Record<string, unknown> = {}) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/create',
        headers: { 'x-api-key': key },
        payload: { auth_context: { type: 'payment', amount, ...extra } },
      });

    it('concurrent creates share commits; every answered context is stored as answered', async () => {
      expect((await create(1)).statusCode).toBe(201); // the key is verified once, then cached
      const before = t.ctx.database.commits();
      const answers = await Promise.all(Array.from({ length: N }, (_, i) => create(100 + i)));
      expect(answers.map((a) => a.statusCode)).toEqual(Array(N).fill(201));
      const ids = answers.map((a) => a.json().data.auth_id as string);
      expect(new Set(ids).size).toBe(N);
      const commits = t.ctx.database.commits() - before;
      expect(commits).toBeGreaterThan(0);
      // Observed: 1 on SQLite, 2–3 on PostgreSQL (the next group starts while the previous one commits).
      expect(commits).toBeLessThanOrEqual(8);
      const rows = await t.ctx.database.db
        .selectFrom('auth_contexts')
        .select(['id', 'amount', 'status'])
        .where('id', 'in', ids)
        .execute();
      const amount = new Map(rows.map((r) => [r.id, Number(r.amount)]));
      expect(ids.map((id) => amount.get(id))).toEqual(Array.from({ length: N }, (_, i) => 100 + i));
      expect(rows.every((r) => r.status === 'pending')).toBe(true);
      if (t.ctx.database.kind === 'postgres') {
        // Rows per inserting transaction: as many transactions as the group commit counted, and one COMMIT
        // carried a large share of the creates.
        const tx = await sql<{ n: string }>`select count(*) as n from auth_contexts
          where id in (${sql.join(ids)}) group by xmin::text`.execute(t.ctx.database.db);
        expect(tx.rows).toHaveLength(commits);
        expect(Math.max(...tx.rows.map((r) => Number(r.n)))).toBeGreaterThanOrEqual(N / 4);
      }
    });

    it('a refused create in the group is answered alone; the others are created', async () => {
      const answers = await Promise.all([
        create(1),
        create(2, { pvs_id: '00000000-0000-4000-8000-000000000000' }),
        create(3, { predicates: [{ type: 'in_set', attribute: 'nationality', values: ['DE', 'FR'] }] }),
        create(4),
      ]);
      expect(answers.map((a) => a.statusCode)).toEqual([201, 404, 201, 201]);
      const ids = [answers[0], answers[2], answers[3]].map((a) => a!.json().data.auth_id as string);
      const stored = await t.ctx.database.db
        .selectFrom('auth_contexts')
        .select('id')
        .where('id', 'in', ids)
        .execute();
      expect(stored).toHaveLength(3);
      const predicates = await t.ctx.database.db
        .selectFrom('auth_context_predicates')
        .select('auth_id')
        .where('auth_id', '=', ids[1]!)
        .execute();
      expect(predicates).toHaveLength(1);
    });
  });
}

contract('auth context creation on SQLite', async () => undefined);

describeNeeding(postgresUnavailable())('PostgreSQL', () => {
  let pg: TestPostgres | undefined;
  afterAll(() => pg?.stop());
  contract('auth context creation on PostgreSQL', async () => {
    pg = await startPostgres();
    return pg.createDatabase('create_group');
  });
});
