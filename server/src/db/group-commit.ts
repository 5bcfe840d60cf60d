import { CompiledQuery, type Insertable, type Kysely, type Transaction } from 'kysely';
import type { DB, DbKind } from './schema.ts';
import type { SqliteDirect } from './sqlite-driver.ts';

/** The most writes that share one commit; more wait for the next one. */
export const MAX_GROUP = 256;

/** Rows of one multi-row INSERT at most (PostgreSQL allows 65 535 parameters in a statement). */
const MAX_INSERT_ROWS = 500;

/** INSERT texts kept (one per table, column list and row count). */
const MAX_INSERT_SHAPES = 2000;

/** PostgreSQL: INSERTs of at most this many rows run as named statements (db/pg-named.ts). */
const PREPARED_ROWS = 64;

/**
 * Rows a write hands to its group instead of inserting them itself: the group inserts the rows of all its
 * writes, table by table in the order the tables were first named and each table's rows in arrival order,
 * after the writes ran and before its COMMIT. On PostgreSQL that is one multi-row INSERT (one round trip)
 * per table for the whole group; on SQLite a few multi-row INSERTs of fixed sizes, each prepared once and run
 * straight on the connection.
 * A write must not read back a row it staged (it is inserted after every write of the group ran).
 */
export interface WriteBatch {
  insert<T extends keyof DB & string>(table: T, row: Insertable<DB[T]>): void;
}

export type WriteJob<T> = (trx: Transaction<DB>, batch: WriteBatch) => Promise<T>;

interface Job {
  run: WriteJob<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

type Staged = Map<string, Record<string, unknown>[]>;

/** An INSERT into a table named at run time; the rows were typed by `WriteBatch.insert`. */
interface UntypedInsert {
  values(rows: Record<string, unknown> | Record<string, unknown>[]): {
    execute(): Promise<unknown>;
    compile(): { sql: string };
  };
}
const into = (trx: Transaction<DB>, table: string) =>
  trx.insertInto(table as keyof DB) as unknown as UntypedInsert;

/** A row's columns: its keys with a value (Kysely leaves a column whose value is undefined out of an INSERT). */
function columnsOf(row: Record<string, unknown>): string[] {
  const columns: string[] = [];
  for (const c in row) if (row[c] !== undefined) columns.push(c);
  return columns;
}

function sameColumns(row: Record<string, unknown>, columns: readonly string[]): boolean {
  let n = 0;
  for (const c in row) {
    if (row[c] === undefined) continue;
    if (c !== columns[n]) return false;
    n++;
  }
  return n === columns.length;
}

function stager(staged: Staged): WriteBatch {
  return {
    insert(table, row) {
      const rows = staged.get(table);
      if (rows) rows.push(row as Record<string, unknown>);
      else staged.set(table, [row as Record<string, unknown>]);
    },
  };
}

const ROLLBACK_TO = 'rollback to savepoint group_job';
const RELEASE = 'release savepoint group_job';

/**
 * Rows of one multi-row INSERT on SQLite: the largest of these that fits what is left, so a group's rows take a
 * few statements of a few fixed shapes (each prepared once) whatever the group's size.
 */
const SQLITE_CHUNKS = [64, 16, 4, 1] as const;

/**
 * Group commit (docs/performance.md): write transactions that arrive while a commit is in flight are run,
 * in arrival order, inside the next single database transaction, and every caller's promise settles only
 * after that transaction is durable (fsync done), so each answer is still durable while one fsync serves
 * many requests. Rows the writes stage (`WriteBatch`) are inserted together at the end of the group.
 *
 * SQLite: a group is formed when the previous one is durable (its fsync done, db/sqlite-driver.ts): the
 * requests that arrive while an fsync is in flight all wait for the next group instead of paying a COMMIT of
 * their own. Each job runs inside a savepoint, so a job that throws is rolled back alone and the others
 * still commit; the savepoint is taken just before the job's first statement, so a job that only stages rows
 * costs none. The group's own statements (savepoints, staged inserts) run on the connection without Kysely
 * (`SqliteDirect`, db/sqlite-driver.ts): no query is built and no promise made per statement.
 *
 * PostgreSQL: a group is formed when the previous one sent its COMMIT (and the one before is durable); a group
 * of writes that only stage rows costs three round trips (BEGIN, one INSERT per table, COMMIT) whatever its
 * size. Savepoints would cost
 * two round trips per job, so the group runs without them and, if any job (or a staged insert) throws, the
 * whole group is rolled back and every job is run again, in arrival order, in a transaction of its own.
 * A failed staged insert on SQLite is handled the same way.
 *
 * A job may therefore run more than once: it must only touch the database through `trx` and `batch` (side
 * effects belong after its promise resolved), and it must not itself call `write` (it would wait for a
 * commit that waits for it).
 */
export class GroupCommit {
  readonly #db: Kysely<DB>;
  readonly #kind: DbKind;
  readonly #direct: SqliteDirect | undefined;
  readonly #prepare: ((sql: string) => void) | undefined;
  #queue: Job[] = [];
  /** A group is being formed or run (SQLite: until its COMMIT returned; PostgreSQL: until durable). */
  #busy = false;
  /** Groups whose COMMIT (and fsync) is in flight. */
  #syncing = 0;
  #transactions = 0;
  /** Insert SQL per table, column list and row count (SQLite: one prepared statement each, db/sqlite-driver.ts). */
  readonly #insertSql = new Map<string, string>();

  /**
   * `direct`: SQLite's connection driven without Kysely (db/sqlite-driver.ts); required on SQLite.
   * `prepare`: PostgreSQL; called with each INSERT text of at most PREPARED_ROWS rows, to run it as a named
   * statement (db/pg-named.ts).
   */
  constructor(
    db: Kysely<DB>,
    kind: DbKind,
    options: { direct?: SqliteDirect; prepare?: (sql: string) => void } = {},
  ) {
    if (kind === 'sqlite' && !options.direct) {
      throw new Error('group commit on SQLite needs the direct connection');
    }
    this.#db = db;
    this.#kind = kind;
    this.#direct = options.direct;
    this.#prepare = options.prepare;
  }

  /** Database transactions this instance ran so far (each one commit, or one rollback). */
  get transactions(): number {
    return this.#transactions;
  }

  write<T>(run: WriteJob<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run, resolve: resolve as (v: unknown) => void, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#busy || this.#queue.length === 0) return;
    // SQLite: no group commits while another's fsync is in flight: everything that arrives meanwhile joins
    // the next group (the event loop keeps serving requests during the fsync, so fewer and larger commits
    // cost less CPU per write; docs/performance.md). PostgreSQL: one group may run during the previous one's
    // COMMIT round trip (on another pooled connection), none behind that.
    if (this.#syncing > (this.#kind === 'sqlite' ? 0 : 1)) return;
    this.#busy = true;
    // After the current I/O phase: every request whose bytes arrived with this one joins the same commit.
    setImmediate(() => void (this.#kind === 'sqlite' ? this.#flushSqlite() : this.#flushPostgres()));
  }

  async #flushPostgres(): Promise<void> {
    let committing = false;
    try {
      await this.#allOrEach(this.#queue.splice(0, MAX_GROUP), () => {
        committing = true;
        this.#syncing += 1;
        this.#busy = false;
        this.#schedule();
      });
    } finally {
      if (committing) this.#syncing -= 1;
      else this.#busy = false;
      this.#schedule();
    }
  }

  #transaction() {
    this.#transactions += 1;
    return this.#db.transaction();
  }

  /**
   * Inserts the staged rows, table by table; consecutive rows with the same columns share a statement, in
   * arrival order. Each statement's SQL is built once per table, column list and row count, then reused with
   * new parameters: SQLite runs it straight on the connection (a few fixed row counts, SQLITE_CHUNKS, each
   * prepared once), PostgreSQL gets one multi-row INSERT per run of rows (MAX_INSERT_ROWS at most).
   */
  async #insertStaged(trx: Transaction<DB>, staged: Staged): Promise<void> {
    for (const [table, rows] of staged) {
      let i = 0;
      while (i < rows.length) {
        const columns = columnsOf(rows[i]!);
        let end = i + 1;
        while (end < rows.length && sameColumns(rows[end]!, columns)) end++;
        while (i < end) {
          const n =
            this.#kind === 'sqlite'
              ? (SQLITE_CHUNKS.find((size) => size <= end - i) as number)
              : Math.min(end - i, MAX_INSERT_ROWS);
          const text = this.#insertText(trx, table, columns, rows, i, n);
          const parameters: unknown[] = [];
          for (let r = i; r < i + n; r++) {
            const row = rows[r]!;
            for (const c of columns) parameters.push(row[c]);
          }
          if (this.#kind === 'sqlite') (this.#direct as SqliteDirect).run(text, parameters);
          else await trx.executeQuery(CompiledQuery.raw(text, parameters));
          i += n;
        }
      }
    }
  }

  /** The INSERT of rows[i, i + n) (all with `columns`), compiled by Kysely once per shape and kept. */
  #insertText(
    trx: Transaction<DB>,
    table: string,
    columns: string[],
    rows: Record<string, unknown>[],
    i: number,
    n: number,
  ): string {
    const key = `${table}\u0000${columns.join('\u0000')}\u0000${n}`;
    let text = this.#insertSql.get(key);
    if (text === undefined) {
      text = into(trx, table)
        .values(rows.slice(i, i + n))
        .compile().sql;
      // Shapes are few (tables × column lists × row counts); the bound only guards against a runaway caller.
      if (this.#insertSql.size >= MAX_INSERT_SHAPES) this.#insertSql.clear();
      this.#insertSql.set(key, text);
      if (n <= PREPARED_ROWS) this.#prepare?.(text);
    }
    return text;
  }

  async #flushSqlite(): Promise<void> {
    let group: Job[] = [];
    const outcomes: ({ ok: true; value: unknown } | { ok: false; err: unknown })[] = [];
    let committing = false;
    const failed = GROUP_FAILED;
    try {
      await this.#transaction().execute(async (trx) => {
        group = this.#queue.splice(0, MAX_GROUP);
        const direct = this.#direct as SqliteDirect;
        const staged: Staged = new Map();
        for (const job of group) {
          // Each job in a savepoint, taken before its first statement (none for a job that only stages rows).
          direct.armSavepoint('group_job');
          const mine: Staged = new Map();
          try {
            const value = await job.run(trx, stager(mine));
            if (direct.disarmSavepoint()) direct.run(RELEASE, []);
            outcomes.push({ ok: true, value });
            for (const [table, rows] of mine) {
              const all = staged.get(table);
              if (all) all.push(...rows);
              else staged.set(table, rows);
            }
          } catch (err) {
            if (direct.disarmSavepoint()) {
              direct.run(ROLLBACK_TO, []);
              direct.run(RELEASE, []);
            }
            outcomes.push({ ok: false, err });
          }
        }
        try {
          await this.#insertStaged(trx, staged);
        } catch {
          throw failed; // rolls the group back; the jobs run again one by one below
        }
        // COMMIT comes next: the connection is free once it returned and the fsync follows
        // (db/sqlite-driver.ts), so the next group may form now.
        committing = true;
        this.#syncing += 1;
        this.#busy = false;
        this.#schedule();
      });
    } catch (err) {
      if (committing) {
        // The commit or its fsync failed: nothing of the group is acknowledged.
        this.#syncing -= 1;
        for (const job of group) job.reject(err);
      } else {
        // Rolled back before COMMIT (still the only group in flight, so arrival order is kept): a staged
        // insert failed, and every job runs again alone; or the transaction could not start.
        if (err === failed) await this.#eachAlone(group);
        else for (const job of group.length ? group : this.#queue.splice(0, MAX_GROUP)) job.reject(err);
        this.#busy = false;
      }
      this.#schedule();
      return;
    }
    this.#syncing -= 1;
    this.#schedule();
    for (const [i, job] of group.entries()) {
      const o = outcomes[i]!;
      if (o.ok) job.resolve(o.value);
      else job.reject(o.err);
    }
  }

  /**
   * PostgreSQL: the group in one transaction without savepoints. `committing` is called when only the COMMIT
   * is left, so the next group may start meanwhile (on another pooled connection).
   */
  async #allOrEach(group: Job[], committing: () => void): Promise<void> {
    const failed = GROUP_FAILED;
    let cause: unknown;
    let values: unknown[] | undefined;
    try {
      values = await this.#transaction().execute(async (trx) => {
        const out: unknown[] = [];
        const staged: Staged = new Map();
        const batch = stager(staged);
        try {
          for (const job of group) out.push(await job.run(trx, batch));
          await this.#insertStaged(trx, staged);
        } catch (err) {
          cause = err;
          throw failed; // rolls the group back; the jobs run again one by one below
        }
        committing();
        return out;
      });
    } catch (err) {
      if (err !== failed) {
        // The commit itself failed (connection lost, server gone): the outcome is unknown, as for any
        // single transaction, so nothing runs twice.
        for (const job of group) job.reject(err);
        return;
      }
    }
    if (values) {
      for (const [i, job] of group.entries()) job.resolve(values[i]);
    } else if (group.length === 1) {
      group[0]!.reject(cause);
    } else {
      await this.#eachAlone(group);
    }
  }

  /** Each job in a transaction of its own, in arrival order, so that appends (the audit chain) keep it. */
  async #eachAlone(group: Job[]): Promise<void> {
    for (const job of group) {
      await this.#transaction()
        .execute(async (trx) => {
          const staged: Staged = new Map();
          const value = await job.run(trx, stager(staged));
          await this.#insertStaged(trx, staged);
          return value;
        })
        .then(job.resolve, job.reject);
    }
  }
}

class JobFailed extends Error {}

/**
 * Thrown inside a group's transaction to roll it back when one of its jobs (or a staged insert) failed; only
 * its identity matters, so one instance serves every group (building an Error per group costs a stack trace).
 */
const GROUP_FAILED = new JobFailed('a write of the group failed');
