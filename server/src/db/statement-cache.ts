import type SQLite from 'better-sqlite3';

/** How many distinct SQL texts keep a prepared statement (the app issues a few hundred at most). */
const MAX_STATEMENTS = 1000;

/**
 * The `database` Kysely's SqliteDialect needs, with each SQL text prepared once. Kysely's driver calls
 * `prepare` for every query, and preparing (parsing and planning) cost more than running the small
 * indexed queries of the vendor routes (docs/performance.md). A statement is only ever used by the one
 * connection, under Kysely's connection mutex, so reusing it is safe.
 */
export function withStatementCache(sqlite: SQLite.Database): {
  prepare(sql: string): SQLite.Statement;
  close(): void;
} {
  const statements = new Map<string, SQLite.Statement>();
  return {
    prepare(sql: string) {
      let stmt = statements.get(sql);
      if (!stmt) {
        stmt = sqlite.prepare(sql);
        if (statements.size >= MAX_STATEMENTS) {
          const oldest = statements.keys().next().value;
          if (oldest !== undefined) statements.delete(oldest);
        }
        statements.set(sql, stmt);
      }
      return stmt;
    },
    close() {
      statements.clear();
      sqlite.close();
    },
  };
}
