import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type { Pool, PoolClient } from 'pg';

/**
 * PostgreSQL statements that are prepared once per connection (docs/performance.md, "Creates, third pass"):
 * a SQL text registered here runs as a named statement, so PostgreSQL parses and plans it the first time it
 * runs on a connection and only binds and executes it afterwards. Group commit registers its multi-row
 * INSERTs (db/group-commit.ts), whose text is the same for every group of the same size. Other texts run as
 * before (unnamed). At most `max` texts are named, so the server-side statements per connection stay bounded.
 */
export class NamedStatements {
  readonly #names = new Map<string, string>();
  constructor(private readonly max = 200) {}

  /** Runs `sql` as a named statement from now on (ignored once `max` texts are named). */
  add(sql: string): void {
    if (this.#names.has(sql) || this.#names.size >= this.max) return;
    this.#names.set(sql, `palmid_${this.#names.size + 1}`);
  }

  /** The pool as Kysely's PostgreSQL dialect uses it, with named texts sent as named statements. */
  pool(pool: Pool): PostgresPool {
    const clients = new WeakMap<PoolClient, PostgresPoolClient>();
    const names = this.#names;
    return {
      async connect() {
        const client = await pool.connect();
        let wrapped = clients.get(client);
        if (!wrapped) {
          const query = (sql: unknown, parameters?: ReadonlyArray<unknown>) => {
            if (typeof sql !== 'string') return client.query(sql as never);
            const name = names.get(sql);
            const values = parameters as unknown[];
            return name ? client.query({ name, text: sql, values }) : client.query(sql, values);
          };
          wrapped = {
            query: query as unknown as PostgresPoolClient['query'],
            release: () => client.release(),
          };
          clients.set(client, wrapped);
        }
        return wrapped;
      },
      end: () => pool.end(),
    };
  }
}
