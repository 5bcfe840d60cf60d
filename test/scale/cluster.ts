import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp, type TestApp } from '@palmid/server/dev/testing';
import { IN_CI } from '../support/ci.ts';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../support/postgres.ts';
import { redisUnavailable, startRedis, type TestRedis } from '../support/redis.ts';

/**
 * Several server instances in one test process, sharing one store (PostgreSQL when available, else one
 * SQLite file) and one Redis, each with its own in-memory gallery, event hub and HTTP port — as several
 * stateless instances behind a load balancer would be.
 */
export interface Cluster {
  instances: TestApp[];
  /** ws://127.0.0.1:<port> of each instance. */
  bases: string[];
  store: 'postgres' | 'sqlite';
  redisUrl: string;
  /** The environment every instance was started with (for CLI processes on the same store). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Why a cluster cannot start here: it needs Redis. Its store is PostgreSQL where installed and a shared
 * SQLite file otherwise, except under CI, where PostgreSQL is required too (test/support/requirements.ts).
 */
export function clusterUnavailable(): string | null {
  return redisUnavailable() ?? (IN_CI ? postgresUnavailable() : null);
}

export async function startCluster(n = 2, extraEnv: Record<string, string> = {}): Promise<Cluster> {
  const redis: TestRedis = await startRedis();
  let pg: TestPostgres | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'palmid-cluster-'));
  let databaseUrl: string;
  if (postgresUnavailable() === null) {
    pg = await startPostgres();
    databaseUrl = await pg.createDatabase();
  } else {
    databaseUrl = `sqlite:${join(dir, 'shared.db')}`;
  }
  const env = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    PALMID_MASTER_KEY: randomBytes(32).toString('hex'),
    ...extraEnv,
  };
  // Started together, as a deployment would: migrations must not race.
  const instances = await Promise.all(Array.from({ length: n }, () => createTestApp(env)));
  const bases: string[] = [];
  for (const t of instances) {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    bases.push(`ws://127.0.0.1:${(t.app.server.address() as { port: number }).port}`);
  }
  return {
    instances,
    bases,
    store: pg ? 'postgres' : 'sqlite',
    redisUrl: redis.url,
    env,
    async stop() {
      for (const t of instances) await t.close();
      await pg?.stop();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls until `probe` returns true (cross-instance effects travel through Redis asynchronously). */
export async function eventually(probe: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
