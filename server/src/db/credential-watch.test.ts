import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sqliteCredentialWatch } from './credential-watch.ts';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The SQLite credential epoch read once per event-loop turn (db/credential-watch.ts). */
describe('sqliteCredentialWatch', () => {
  let dir: string;
  let mine: SQLite.Database;
  let other: SQLite.Database;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'palmid-watch-'));
    mine = new SQLite(join(dir, 'db.sqlite'));
    mine.pragma('journal_mode = WAL');
    mine.exec('create table credential_epoch (id integer primary key, n integer not null)');
    mine.exec('insert into credential_epoch values (1, 1)');
    other = new SQLite(join(dir, 'db.sqlite'));
  });
  afterEach(() => {
    mine.close();
    other.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const bump = (db: SQLite.Database) =>
    db.prepare('update credential_epoch set n = n + 1 where id = 1').run();

  it("sees another connection's change on the next turn, and shares one read within a turn", async () => {
    const watch = sqliteCredentialWatch(mine, 60_000);
    expect(watch.epoch()).toBe(1);
    bump(other);
    // Same turn: the requests that arrived together share the value read first.
    expect(watch.epoch()).toBe(1);
    await nextTurn();
    expect(watch.epoch()).toBe(2);
  });

  it("sees its own connection's change at once, within the same turn", () => {
    const watch = sqliteCredentialWatch(mine, 60_000);
    expect(watch.epoch()).toBe(1);
    bump(mine);
    expect(watch.epoch()).toBe(2);
  });

  it('reads again once the shared value is older than its bound, even within a turn', () => {
    const watch = sqliteCredentialWatch(mine, 0);
    expect(watch.epoch()).toBe(1);
    bump(other);
    expect(watch.epoch()).toBe(2);
  });
});
