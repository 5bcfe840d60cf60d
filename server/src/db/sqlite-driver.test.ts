import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { DurableSqliteDialect, WalFlusher, walSync } from './sqlite-driver.ts';

/** A sync the test releases by hand, recording what it was asked. */
function manualSync() {
  const calls: { path: string; done: () => void }[] = [];
  const sync = (path: string) =>
    new Promise<void>((resolve) => {
      calls.push({ path, done: resolve });
    });
  return { calls, sync };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('WalFlusher', () => {
  it('callers during a running fsync share the next one; nobody is answered by an fsync older than its call', async () => {
    const { calls, sync } = manualSync();
    const f = new WalFlusher('/x-wal', sync);
    const settled: string[] = [];
    const a = f.flush().then(() => settled.push('a'));
    await tick();
    expect(calls).toHaveLength(1);
    const b = f.flush().then(() => settled.push('b'));
    const c = f.flush().then(() => settled.push('c'));
    await tick();
    expect(calls).toHaveLength(1); // b and c wait for the next one
    calls[0]!.done();
    await a;
    await tick();
    expect(settled).toEqual(['a']);
    expect(calls).toHaveLength(2); // one fsync for b and c together
    calls[1]!.done();
    await Promise.all([b, c]);
    expect(settled).toEqual(['a', 'b', 'c']);
    expect(calls.map((x) => x.path)).toEqual(['/x-wal', '/x-wal']);
  });
});

describe('walSync', () => {
  it('opens the log once and keeps it; a missing log is nothing to sync; close releases it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palmid-walsync-'));
    try {
      const path = join(dir, 'd.db-wal');
      const sync = walSync();
      await sync(path); // no log yet
      writeFileSync(path, 'frames');
      const fds = () => readdirSync('/proc/self/fd').length;
      const before = fds();
      await sync(path);
      expect(fds()).toBe(before + 1); // kept open for the next commits
      await sync(path);
      await sync(path);
      expect(fds()).toBe(before + 1);
      await sync.close?.();
      expect(fds()).toBe(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('DurableSqliteDialect', () => {
  let dir: string | undefined;
  let db: Kysely<{ t: { v: number } }> | undefined;
  afterEach(async () => {
    await db?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function open(sync: (p: string) => Promise<void>) {
    dir = mkdtempSync(join(tmpdir(), 'palmid-driver-'));
    const path = join(dir, 'd.db');
    const raw = new SQLite(path);
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = NORMAL');
    raw.exec('create table t (v integer)');
    db = new Kysely({ dialect: new DurableSqliteDialect(raw, `${path}-wal`, sync) });
    return path;
  }

  it('answers a transaction only after the log was fsynced, and lets the next one run meanwhile', async () => {
    const { calls, sync } = manualSync();
    const path = open(sync);
    let firstDone = false;
    const first = db!
      .transaction()
      .execute((trx) => trx.insertInto('t').values({ v: 1 }).execute())
      .then(() => {
        firstDone = true;
      });
    for (let i = 0; i < 5 && calls.length === 0; i++) await tick();
    expect(calls.map((c) => c.path)).toEqual([`${path}-wal`]);
    expect(firstDone).toBe(false); // committed, not yet durable: not answered
    // The connection is free: a second transaction commits while the first fsync runs.
    const second = db!.transaction().execute((trx) => trx.insertInto('t').values({ v: 2 }).execute());
    const rows = await db!.selectFrom('t').select('v').orderBy('v').execute();
    expect(rows.map((r) => r.v)).toEqual([1, 2]);
    calls[0]!.done();
    await first;
    expect(firstDone).toBe(true);
    for (let i = 0; i < 5 && calls.length < 2; i++) await tick();
    calls[1]!.done();
    await second;
  });

  it('answers a write outside a transaction only after its fsync; a read needs none', async () => {
    const { calls, sync } = manualSync();
    open(sync);
    let done = false;
    const w = db!
      .insertInto('t')
      .values({ v: 3 })
      .execute()
      .then(() => {
        done = true;
      });
    for (let i = 0; i < 5 && calls.length === 0; i++) await tick();
    expect(calls).toHaveLength(1);
    expect(done).toBe(false);
    calls[0]!.done();
    await w;
    expect(done).toBe(true);
    expect((await sql<{ n: number }>`select count(*) as n from t`.execute(db!)).rows[0]!.n).toBe(1);
    expect(calls).toHaveLength(1);
  });

  it('a failed fsync fails the commit it was meant to make durable', async () => {
    open(async () => {
      throw new Error('EIO');
    });
    await expect(
      db!.transaction().execute((trx) => trx.insertInto('t').values({ v: 4 }).execute()),
    ).rejects.toThrow('EIO');
  });
});
