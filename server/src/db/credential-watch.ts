import type SQLite from 'better-sqlite3';
import type { Pool } from 'pg';

/**
 * Tells a cache of verified credentials (plugins/app/key-cache.ts) whether the credential tables
 * (`api_keys`, `vendors`) changed, whoever changed them: this process, another server instance, or the admin
 * CLI (which only opens the database). Triggers from migration 0005 do the counting in the database, so no
 * code path that revokes or rotates a key can forget to announce it.
 *
 * `epoch()` is a number that changes whenever those tables change, or `undefined` when the change feed is
 * not known to be complete (PostgreSQL listener not connected yet, or lost): then nothing may be cached.
 */
export interface CredentialWatch {
  epoch(): number | undefined;
  close(): Promise<void>;
}

/**
 * SQLite: the trigger bumps `credential_epoch.n` in the writer's own transaction, so a read after the
 * revocation committed (in any process on this file) already sees the new value.
 *
 * The read costs a WAL read lock (two `fcntl` and an `fstat` on the shared-memory and log files): several µs
 * on a loaded machine, the largest cost of an authenticated read (docs/performance.md). It is therefore made
 * at most once per event-loop turn and 1 ms: the requests whose headers are parsed in one turn (those that
 * arrived together) share the epoch read by the first of them, which is what they would see had they been
 * answered one turn earlier, and a change committed by another process is seen by the next turn. A change
 * made by this process's own connection (a rotation through the API) is seen at once: it moves the
 * connection's `total_changes()`, which costs no lock to read and invalidates the shared value.
 */
export function sqliteCredentialWatch(sqlite: SQLite.Database, maxAgeMs = 1): CredentialWatch {
  let stmt: SQLite.Statement | undefined;
  let changes: SQLite.Statement | undefined;
  let shared: number | undefined;
  let sharedChanges = -1;
  let readAt = 0;
  const forget = () => {
    shared = undefined;
  };
  return {
    epoch() {
      stmt ??= sqlite.prepare('select n from credential_epoch where id = 1').pluck();
      changes ??= sqlite.prepare('select total_changes()').pluck();
      const local = changes.get() as number;
      const now = performance.now();
      if (shared !== undefined && local === sharedChanges && now - readAt < maxAgeMs) return shared;
      if (shared === undefined) setImmediate(forget);
      shared = stmt.get() as number;
      sharedChanges = local;
      readAt = now;
      return shared;
    },
    async close() {},
  };
}

export const CREDENTIALS_CHANNEL = 'palmid_credentials';

/**
 * PostgreSQL: the trigger sends NOTIFY palmid_credentials with the writer's commit; every instance keeps
 * one LISTEN connection and counts the notifications. Started on first use (the admin CLI never uses it).
 * While the listener is not connected the epoch is `undefined` (no caching); a reconnect starts a new epoch,
 * since notifications sent in between were lost.
 */
export function postgresCredentialWatch(pool: Pool, retryMs = 1000): CredentialWatch {
  let epoch = 0;
  let listening = false;
  let started = false;
  let closed = false;
  let client: import('pg').PoolClient | undefined;
  let retry: NodeJS.Timeout | undefined;

  const lost = () => {
    listening = false;
    epoch += 1;
    const c = client;
    client = undefined;
    c?.release(true);
    if (!closed) {
      retry = setTimeout(connect, retryMs);
      retry.unref();
    }
  };
  const connect = async () => {
    if (closed) return;
    try {
      const c = await pool.connect();
      client = c;
      c.on('notification', (msg) => {
        if (msg.channel === CREDENTIALS_CHANNEL) epoch += 1;
      });
      c.on('error', lost);
      c.on('end', () => listening && lost());
      await c.query(`LISTEN ${CREDENTIALS_CHANNEL}`);
      epoch += 1;
      listening = true;
    } catch {
      if (client) lost();
      else if (!closed) {
        retry = setTimeout(connect, retryMs);
        retry.unref();
      }
    }
  };
  return {
    epoch() {
      if (!started) {
        started = true;
        void connect();
      }
      return listening ? epoch : undefined;
    },
    async close() {
      closed = true;
      listening = false;
      if (retry) clearTimeout(retry);
      const c = client;
      client = undefined;
      c?.release(true);
    },
  };
}
