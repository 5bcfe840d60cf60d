import { randomBytes } from 'node:crypto';

/**
 * Throwaway PostgreSQL databases for tests: `PALMID_TEST_DATABASE_URL` names a server (any database on it,
 * typically `postgres`); each test app gets its own fresh database there, dropped again on close.
 */
export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

async function admin(serverUrl: string, sql: string): Promise<void> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function createScratchDatabase(serverUrl: string): Promise<ScratchDatabase> {
  const name = `palmid_t_${randomBytes(6).toString('hex')}`;
  await admin(serverUrl, `CREATE DATABASE "${name}"`);
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    // FORCE (PostgreSQL 13+) ends connections a test left open.
    drop: () => admin(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}
