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
 * revocation committed (in any process on this file) already sees the new value; one prepared one-row
 * read per request, no I/O beyond the page cache.
 */
export function sqliteCredentialWatch(sqlite: SQLite.Database): CredentialWatch {
  let stmt: SQLite.Statement | undefined;
  return {
    epoch() {
      stmt ??= sqlite.prepare('select n from credential_epoch where id = 1').pluck();
      return stmt.get() as number;
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
