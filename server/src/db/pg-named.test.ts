import type { Pool, PoolClient } from 'pg';
import { describe, expect, it } from 'vitest';
import { NamedStatements } from './pg-named.ts';

/** db/pg-named.ts against a recording stand-in for pg's pool (the real one: group-commit.test.ts). */
function fakePool() {
  const calls: unknown[][] = [];
  let released = 0;
  const client = {
    query: (...args: unknown[]) => {
      calls.push(args);
      return Promise.resolve({ rows: [], rowCount: 0, command: 'SELECT' });
    },
    release: () => {
      released++;
    },
  };
  const pool = { connect: async () => client, end: async () => {} };
  return {
    calls,
    pool: pool as unknown as Pool,
    client: client as unknown as PoolClient,
    released: () => released,
  };
}

describe('NamedStatements', () => {
  it('sends a registered text as a named statement and any other text as before', async () => {
    const named = new NamedStatements();
    const { calls, pool, released } = fakePool();
    const wrapped = named.pool(pool);
    named.add('insert into t (a) values ($1)');
    const c = await wrapped.connect();
    await c.query('insert into t (a) values ($1)', [1]);
    await c.query('select $1', [2]);
    c.release();
    expect(calls).toEqual([
      [{ name: 'palmid_1', text: 'insert into t (a) values ($1)', values: [1] }],
      ['select $1', [2]],
    ]);
    expect(released()).toBe(1);
    // The same client is the same connection for Kysely (it keeps its connections by client).
    expect(await wrapped.connect()).toBe(c);
  });

  it('names each text once and at most `max` texts', async () => {
    const named = new NamedStatements(2);
    const { calls, pool } = fakePool();
    named.add('a');
    named.add('a');
    named.add('b');
    named.add('c');
    const c = await named.pool(pool).connect();
    for (const text of ['a', 'b', 'c']) await c.query(text, []);
    expect(calls).toEqual([
      [{ name: 'palmid_1', text: 'a', values: [] }],
      [{ name: 'palmid_2', text: 'b', values: [] }],
      ['c', []],
    ]);
  });
});
