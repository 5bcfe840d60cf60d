import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import { ensurePrivateDir, privateSqliteFiles } from '../lib/private-files.ts';
import { type CredentialWatch, postgresCredentialWatch, sqliteCredentialWatch } from './credential-watch.ts';
import { GroupCommit, type WriteJob } from './group-commit.ts';
import { migrationProvider } from './migrations.ts';
import { NamedStatements } from './pg-named.ts';
import type { DB, DbKind } from './schema.ts';
import { DurableSqliteDialect } from './sqlite-driver.ts';

export type { WriteBatch, WriteJob } from './group-commit.ts';
export type { DB, Db, DbKind } from './schema.ts';

export interface Database {
  db: Kysely<DB>;
  kind: DbKind;
  /** Human-readable location without credentials. */
  location: string;
  /**
   * Runs a write transaction with group commit (db/group-commit.ts): resolves once the transaction that
   * carried it is durably committed, shared with the writes that arrived meanwhile. `run` may run more than
   * once and must only use `trx` and `batch` (rows inserted with the whole group's, after every write ran).
   */
  write<T>(run: WriteJob<T>): Promise<T>;
  /** Transactions `write` ran so far: with concurrent writers, fewer than the writes. */
  commits(): number;
  /**
   * Whether the store answers a trivial query. Callers that arrive while a probe is in flight share its
   * answer, so a status endpoint under load costs one round trip per probe, not one per request. A store
   * answered in process (SQLite) answers at once, without a promise.
   */
  ping(): boolean | Promise<boolean>;
  /** Changes to API keys and vendors, from any process (db/credential-watch.ts). */
  credentials: CredentialWatch;
  close(): Promise<void>;
}

/**
 * Opens the store named by DATABASE_URL and brings its schema up to date.
 * SQLite runs in WAL mode and every commit is fsynced before it is answered (db/sqlite-driver.ts): an
 * acknowledged write survives a crash (kill -9 or power loss).
 */
export async function openDatabase(url: string): Promise<Database> {
  let database: Database;
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path !== ':memory:') {
      ensurePrivateDir(dirname(path));
      privateSqliteFiles(path);
    }
    const sqlite = new SQLite(path);
    sqlite.pragma('journal_mode = WAL');
    // The commit's fsync is done by the driver, off the event loop and before any answer
    // (db/sqlite-driver.ts): as durable as synchronous=FULL, without blocking every request on the disk.
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    sqlite.defaultSafeIntegers(false);
    const wal = path === ':memory:' ? undefined : `${path}-wal`;
    const dialect = new DurableSqliteDialect(sqlite, wal);
    const db = new Kysely<DB>({ dialect });
    const group = new GroupCommit(db, 'sqlite', { direct: dialect.direct });
    database = {
      db,
      kind: 'sqlite',
      location: `sqlite:${path}`,
      write: (run) => group.write(run),
      commits: () => group.transactions,
      ping: sqlitePing(sqlite),
      credentials: sqliteCredentialWatch(sqlite),
      close: () => db.destroy(),
    };
  } else if (/^postgres(ql)?:\/\//.test(url)) {
    const pg = await import('pg');
    const { Pool, types } = pg.default;
    // int8 columns carry millisecond timestamps and amounts, all within Number.MAX_SAFE_INTEGER.
    types.setTypeParser(20, (v: string) => Number(v));
    const pool = new Pool({ connectionString: url, max: 10 });
    // An idle connection that breaks (server restart, failover, network) is dropped by the pool and replaced
    // on next use; without a listener the 'error' event would crash the process.
    pool.on('error', () => {});
    // Group commit's INSERTs are prepared once per connection (db/pg-named.ts).
    const named = new NamedStatements();
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: named.pool(pool) }) });
    const u = new URL(url);
    const group = new GroupCommit(db, 'postgres', { prepare: (text) => named.add(text) });
    const credentials = postgresCredentialWatch(pool);
    database = {
      db,
      kind: 'postgres',
      location: `postgres://${u.host}${u.pathname}`,
      write: (run) => group.write(run),
      commits: () => group.transactions,
      ping: singleFlight(() => sql`select 1`.execute(db)),
      credentials,
      close: async () => {
        await credentials.close();
        await db.destroy();
      },
    };
  } else {
    throw new Error('DATABASE_URL must be sqlite:<path> or postgres://…');
  }
  try {
    await migrate(database);
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

/**
 * SQLite: `select 1` on the connection itself, prepared once and answered in process (the same probe as
 * through Kysely, without a trip through its connection queue per `GET /api/v1/status`: docs/performance.md).
 */
function sqlitePing(sqlite: SQLite.Database): () => boolean {
  let stmt: SQLite.Statement | undefined;
  return () => {
    try {
      stmt ??= sqlite.prepare('select 1');
      stmt.get();
      return true;
    } catch {
      return false;
    }
  };
}

/** A probe that callers arriving while it runs share: true when it succeeded. */
function singleFlight(probe: () => Promise<unknown>): () => Promise<boolean> {
  let inFlight: Promise<boolean> | undefined;
  return () => {
    inFlight ??= probe().then(
      () => true,
      () => false,
    );
    const mine = inFlight;
    void mine.then(() => {
      if (inFlight === mine) inFlight = undefined;
    });
    return mine;
  };
}

/** Any constant shared by every palmid instance: the key of the PostgreSQL advisory lock around migrations. */
const MIGRATION_LOCK = 0x70616c6d; // "palm"

/**
 * Brings the schema up to date. On PostgreSQL, instances starting together on a fresh database take an
 * advisory lock first: without it, two of them could both try to create Kysely's migration tables.
 */
async function migrate(database: Database): Promise<void> {
  const run = async (db: Kysely<DB>) => {
    const migrator = new Migrator({ db, provider: migrationProvider(database.kind) });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(String(error));
  };
  if (database.kind !== 'postgres') return run(database.db);
  await database.db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK})`.execute(conn);
    try {
      await run(conn);
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK})`.execute(conn);
    }
  });
}
