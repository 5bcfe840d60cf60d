import { type FileHandle, open } from 'node:fs/promises';
import type SQLite from 'better-sqlite3';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';

/**
 * Kysely's SQLite dialect, with the commit's fsync taken off the event loop (docs/performance.md).
 *
 * The connection runs in WAL mode with `synchronous=NORMAL`, so COMMIT appends to the write-ahead log
 * without waiting for the disk; this driver then fsyncs the log on libuv's thread pool and only then
 * resolves the commit (fdatasync, as SQLite's own sync of the log, through a descriptor kept open).
 * Nothing is acknowledged before its fsync, exactly as with `synchronous=FULL`, but:
 *   - the event loop keeps parsing, checking and answering requests while the disk works, and
 *   - every commit that lands while an fsync is in flight shares the next one (group commit for every
 *     write path, not only `Database.write`).
 * The connection is handed to the next transaction as soon as COMMIT returned; a committed write can thus
 * be read by another request during its own fsync (a few ms) but is never answered to its writer before.
 * WAL recovery keeps a prefix of the commits, so what survives a power loss is always a consistent past
 * state (the audit chain included).
 *
 * Statements are prepared once per SQL text (preparing cost more than running the vendor routes' small
 * indexed queries).
 */
export class DurableSqliteDialect implements Dialect {
  constructor(
    private readonly sqlite: SQLite.Database,
    /** The file to fsync after a commit (`<db>-wal`), or undefined for an in-memory database. */
    private readonly walPath: string | undefined,
    private readonly syncFile: SyncFile = walSync(),
  ) {}
  createAdapter() {
    return new SqliteAdapter();
  }
  #driver: DurableSqliteDriver | undefined;
  createDriver(): Driver {
    this.#driver = new DurableSqliteDriver(this.sqlite, new WalFlusher(this.walPath, this.syncFile));
    return this.#driver;
  }
  /** Statements on the connection a transaction holds, without Kysely (group commit, db/group-commit.ts). */
  get direct(): SqliteDirect {
    if (!this.#driver) throw new Error('the dialect has no driver yet (pass it to a Kysely instance first)');
    return this.#driver;
  }
  // biome-ignore lint/suspicious/noExplicitAny: Kysely's Dialect signature
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }
  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
}

/**
 * The connection as group commit drives it (db/group-commit.ts): only valid inside a transaction, on the
 * connection that transaction holds (nothing else can run on it meanwhile: it is the only one and it is
 * locked), so no query is built and no promise is made per statement.
 */
export interface SqliteDirect {
  /** Runs a statement that returns no rows, prepared once per SQL text. */
  run(sql: string, parameters: readonly unknown[]): void;
  /**
   * Arms a savepoint: it is taken just before the next statement that runs on the connection, if any. A
   * write that issues no statement (it only stages rows) then costs no savepoint and no release.
   */
  armSavepoint(name: string): void;
  /** Disarms the savepoint armed last; true if it was taken (the caller releases or rolls back to it). */
  disarmSavepoint(): boolean;
}

/** How many distinct SQL texts keep a prepared statement (the app issues a few hundred at most). */
const MAX_STATEMENTS = 1000;

class DurableSqliteDriver implements Driver, SqliteDirect {
  readonly #sqlite: SQLite.Database;
  readonly #statements = new Map<string, SQLite.Statement>();
  readonly #mutex = new Mutex();
  readonly #flusher: WalFlusher;
  /** `savepoint <name>`, armed and not yet taken (`armSavepoint`). */
  #armed: string | undefined;
  #taken = false;

  constructor(sqlite: SQLite.Database, flusher: WalFlusher) {
    this.#sqlite = sqlite;
    this.#flusher = flusher;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.#mutex.lock();
    return new Connection(this);
  }

  prepare(sql: string): SQLite.Statement {
    let stmt = this.#statements.get(sql);
    if (!stmt) {
      stmt = this.#sqlite.prepare(sql);
      if (this.#statements.size >= MAX_STATEMENTS) {
        const oldest = this.#statements.keys().next().value;
        if (oldest !== undefined) this.#statements.delete(oldest);
      }
      this.#statements.set(sql, stmt);
    }
    return stmt;
  }

  run(sql: string, parameters: readonly unknown[]): void {
    if (!this.#sqlite.inTransaction) throw new Error('direct statements run only inside a transaction');
    this.prepare(sql).run(parameters);
  }

  armSavepoint(name: string): void {
    this.#armed = `savepoint ${name}`;
    this.#taken = false;
  }

  disarmSavepoint(): boolean {
    const taken = this.#taken;
    this.#armed = undefined;
    this.#taken = false;
    return taken;
  }

  /** Called before every statement a connection runs: takes the armed savepoint first. */
  beforeStatement(): void {
    const armed = this.#armed;
    if (armed === undefined) return;
    this.#armed = undefined;
    this.prepare(armed).run();
    this.#taken = true;
  }

  get inTransaction(): boolean {
    return this.#sqlite.inTransaction;
  }

  durable(): Promise<void> {
    return this.#flusher.flush();
  }

  unlock(): void {
    this.#mutex.unlock();
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const conn = connection as Connection;
    this.disarmSavepoint();
    conn.run('commit');
    // Committed in memory and in the log: the next transaction may start while this one's fsync runs.
    conn.release();
    await this.durable();
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    // After a COMMIT whose fsync failed there is nothing left to roll back: the error is what the caller gets.
    if ((connection as Connection).released) return;
    this.disarmSavepoint();
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as Connection).release();
  }

  async destroy(): Promise<void> {
    this.#statements.clear();
    this.#sqlite.close();
    // Commits still waiting for their fsync get it: the log's descriptor is closed after the last one.
    await this.#flusher.close();
  }
}

/** One acquisition of the single SQLite connection; released once, and unusable afterwards. */
class Connection implements DatabaseConnection {
  #released = false;
  constructor(private readonly driver: DurableSqliteDriver) {}

  run(sql: string, parameters: readonly unknown[] = []): SQLite.RunResult {
    if (this.#released) throw new Error('SQLite connection used after release');
    this.driver.beforeStatement();
    return this.driver.prepare(sql).run(parameters);
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#released) throw new Error('SQLite connection used after release');
    this.driver.beforeStatement();
    const stmt = this.driver.prepare(compiled.sql);
    if (stmt.reader) return { rows: stmt.all(compiled.parameters) as R[] };
    const { changes, lastInsertRowid } = stmt.run(compiled.parameters);
    // A write outside a transaction (or a COMMIT issued as SQL) is only answered once durable; this one
    // keeps the connection meanwhile, as the caller may issue more statements on it.
    if (!this.driver.inTransaction && !/^\s*rollback\b/i.test(compiled.sql)) await this.driver.durable();
    return {
      numAffectedRows: BigInt(changes),
      insertId: BigInt(lastInsertRowid),
      rows: [],
    };
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered (Kysely's own driver streams rows one by one)
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported on SQLite');
  }

  get released(): boolean {
    return this.#released;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.driver.unlock();
  }
}

/**
 * fsync of the write-ahead log, shared: a caller arriving while an fsync runs waits for the next one (its
 * commit may have landed after the running fsync started), and that next one serves all of them.
 */
export class WalFlusher {
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;

  constructor(
    private readonly path: string | undefined,
    private readonly syncFile: SyncFile = walSync(),
  ) {}

  /** Waits for the fsyncs asked for so far, then releases what the sync function holds. */
  async close(): Promise<void> {
    await this.#next?.catch(() => undefined);
    await this.#running?.catch(() => undefined);
    await this.syncFile.close?.();
  }

  flush(): Promise<void> {
    if (!this.path) return Promise.resolve();
    if (!this.#running) {
      this.#running = this.#sync().finally(() => {
        this.#running = undefined;
      });
      return this.#running;
    }
    this.#next ??= this.#running
      .catch(() => undefined)
      .then(() => {
        this.#next = undefined;
        return this.flush();
      });
    return this.#next;
  }

  #sync(): Promise<void> {
    return this.syncFile(this.path as string);
  }
}

/** Makes a file's written data durable; `close` releases what it keeps open. */
export type SyncFile = ((path: string) => Promise<void>) & { close?: () => Promise<void> };

/**
 * fdatasync of the write-ahead log through one descriptor, opened on first use and kept: the log's data and
 * size reach the disk (what SQLite's own sync of the log does with synchronous=FULL), without an open and a
 * close on the thread pool per commit. Keeping the descriptor is safe because SQLite keeps the log file while
 * any connection has the database open (it deletes it when the last one closes, docs: sqlite.org/wal.html),
 * and this connection is open until the driver is destroyed, which closes the descriptor after the last
 * sync; a checkpoint that truncates the log keeps the same file. A failed sync drops the descriptor (the
 * next one reopens it) and fails the commit that waited for it.
 */
export function walSync(): SyncFile {
  let handle: FileHandle | undefined;
  const sync: SyncFile = async (path: string) => {
    if (!handle) {
      handle = await open(path, 'r').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined; // no log yet: nothing was written through it
        throw err;
      });
      if (!handle) return;
    }
    const h = handle;
    try {
      await h.datasync();
    } catch (err) {
      if (handle === h) handle = undefined;
      await h.close().catch(() => undefined);
      throw err;
    }
  };
  sync.close = async () => {
    const h = handle;
    handle = undefined;
    await h?.close();
  };
  return sync;
}

class Mutex {
  #promise: Promise<void> | undefined;
  #resolve: (() => void) | undefined;

  async lock(): Promise<void> {
    while (this.#promise) await this.#promise;
    this.#promise = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  unlock(): void {
    const resolve = this.#resolve;
    this.#promise = undefined;
    this.#resolve = undefined;
    resolve?.();
  }
}
