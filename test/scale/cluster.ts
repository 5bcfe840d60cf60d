import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp, type TestApp } from '@palmid/server/testing.ts';
import WebSocket from 'ws';
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
  stop(): Promise<void>;
}

export function clusterUnavailable(): string | null {
  return redisUnavailable();
}

export async function startCluster(n = 2): Promise<Cluster> {
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
    async stop() {
      for (const t of instances) await t.close();
      await pg?.stop();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A minimal JSON-frame WebSocket client (kiosk or vendor side). */
export class FrameClient {
  readonly frames: Record<string, unknown>[] = [];
  readonly #waiters: {
    pred: (f: Record<string, unknown>) => boolean;
    resolve: (f: Record<string, unknown>) => void;
  }[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      const f = JSON.parse(d.toString()) as Record<string, unknown>;
      const w = this.#waiters.find((x) => x.pred(f));
      if (w) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve(f);
      } else this.frames.push(f);
    });
  }

  static async open(url: string, headers: Record<string, string>): Promise<FrameClient> {
    const ws = new WebSocket(url, { headers });
    const c = new FrameClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return c;
  }

  next(pred: (f: Record<string, unknown>) => boolean, timeoutMs = 5000): Promise<Record<string, unknown>> {
    const found = this.frames.find(pred);
    if (found) {
      this.frames.splice(this.frames.indexOf(found), 1);
      return Promise.resolve(found);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('timed out waiting for a frame')), timeoutMs);
      this.#waiters.push({
        pred,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
      });
    });
  }

  async call(id: string, method: string, params: unknown): Promise<Record<string, unknown>> {
    this.ws.send(JSON.stringify({ id, method, params }));
    return this.next((f) => f.id === id);
  }

  close(): void {
    this.ws.close();
  }
}

/** Polls until `probe` returns true (cross-instance effects travel through Redis asynchronously). */
export async function eventually(probe: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
