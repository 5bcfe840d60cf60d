import { type Kysely, sql, type Transaction } from 'kysely';
import type { DB, DbKind } from './schema.ts';

/** The most writes that share one commit; more wait for the next one. */
export const MAX_GROUP = 256;

interface Job {
  run(trx: Transaction<DB>): Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/**
 * Group commit (docs/performance.md): write transactions that arrive while a commit is in flight are run,
 * in arrival order, inside the next single database transaction, and every caller's promise settles only
 * after that transaction is durable (fsync done), so each answer is still durable while one fsync serves
 * many requests.
 *
 * SQLite: a group is formed when its transaction gets the (single) connection, which is as soon as the
 * previous group's COMMIT returned; the previous group's fsync then runs while this one executes
 * (db/sqlite-driver.ts). Each job runs inside a savepoint, so a job that throws is rolled back alone and
 * the others still commit.
 *
 * PostgreSQL: one group at a time, formed when the previous one is durable. Savepoints would cost two round
 * trips per job, so the group runs without them and, if any job throws, the whole group is rolled back and
 * every job is run again, in arrival order, in a transaction of its own.
 *
 * A job may therefore run more than once: it must only touch the database through `trx` (side effects
 * belong after its promise resolved), and it must not itself call `write` (it would wait for a commit that
 * waits for it).
 */
export class GroupCommit {
  readonly #db: Kysely<DB>;
  readonly #kind: DbKind;
  #queue: Job[] = [];
  #busy = false;
  #transactions = 0;

  constructor(db: Kysely<DB>, kind: DbKind) {
    this.#db = db;
    this.#kind = kind;
  }

  /** Database transactions this instance ran so far (each one commit, or one rollback). */
  get transactions(): number {
    return this.#transactions;
  }

  write<T>(run: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run, resolve: resolve as (v: unknown) => void, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#busy || this.#queue.length === 0) return;
    this.#busy = true;
    // After the current I/O phase: every request whose bytes arrived with this one joins the same commit.
    setImmediate(() => void (this.#kind === 'sqlite' ? this.#flushSqlite() : this.#flushPostgres()));
  }

  /** The queued jobs, up to a group; on SQLite the next group may form from here on. */
  #take(): Job[] {
    const group = this.#queue.splice(0, MAX_GROUP);
    if (this.#kind === 'sqlite') {
      this.#busy = false;
      this.#schedule();
    }
    return group;
  }

  async #flushPostgres(): Promise<void> {
    try {
      await this.#allOrEach(this.#take());
    } finally {
      this.#busy = false;
      this.#schedule();
    }
  }

  #transaction() {
    this.#transactions += 1;
    return this.#db.transaction();
  }

  async #flushSqlite(): Promise<void> {
    let group: Job[] | undefined;
    const outcomes: ({ ok: true; value: unknown } | { ok: false; err: unknown })[] = [];
    try {
      await this.#transaction().execute(async (trx) => {
        group = this.#take();
        for (const job of group) {
          await sql`savepoint group_job`.execute(trx);
          try {
            outcomes.push({ ok: true, value: await job.run(trx) });
          } catch (err) {
            await sql`rollback to savepoint group_job`.execute(trx);
            outcomes.push({ ok: false, err });
          }
          await sql`release savepoint group_job`.execute(trx);
        }
      });
    } catch (err) {
      // The transaction could not start, or the commit or its fsync failed: nothing of the group is
      // acknowledged.
      group ??= this.#take();
      for (const job of group) job.reject(err);
      return;
    }
    for (const [i, job] of (group ?? []).entries()) {
      const o = outcomes[i]!;
      if (o.ok) job.resolve(o.value);
      else job.reject(o.err);
    }
  }

  async #allOrEach(group: Job[]): Promise<void> {
    if (group.length > 1) {
      const failed = new JobFailed();
      let values: unknown[] | undefined;
      try {
        values = await this.#transaction().execute(async (trx) => {
          const out: unknown[] = [];
          for (const job of group) {
            try {
              out.push(await job.run(trx));
            } catch {
              throw failed; // rolls the group back; the jobs run again one by one below
            }
          }
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
        return;
      }
    }
    // In arrival order, so that appends (the audit chain) keep it.
    for (const job of group) {
      await this.#db
        .transaction()
        .execute((trx) => job.run(trx))
        .then(job.resolve, job.reject);
    }
  }
}

class JobFailed extends Error {}
