import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import WebSocket from 'ws';
import { buildApp } from './app.ts';
import { type ContextOverrides, closeContext, createContext } from './bootstrap.ts';
import { type Config, loadConfig } from './config.ts';
import type { AppContext } from './context.ts';
import { createScratchDatabase, type ScratchDatabase } from './db/scratch.ts';
import { ExactGallery, ExactMatcher } from './modules/matching/exact.ts';
import { createUser, issueUserToken } from './modules/users/service.ts';
import { createVendor } from './modules/vendors/service.ts';

export { ExactGallery, ExactMatcher };

export interface TestApp {
  app: FastifyInstance;
  ctx: AppContext;
  dir: string;
  close(): Promise<void>;
}

/**
 * A test app on a fresh store: SQLite in a temp dir, or, when `PALMID_TEST_DATABASE_URL` names a PostgreSQL
 * server (`npx tsx test/support/run-on-postgres.ts <vitest args>` sets it), a fresh database there.
 */
export async function createTestApp(
  env: Partial<Record<keyof Config, string>> = {},
  now?: () => number,
  overrides: Omit<ContextOverrides, 'now'> = {},
): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-test-'));
  const pgServer = process.env.PALMID_TEST_DATABASE_URL;
  let scratch: ScratchDatabase | undefined;
  if (!env.DATABASE_URL && pgServer) scratch = await createScratchDatabase(pgServer);
  const config = loadConfig({
    DATABASE_URL: scratch?.url ?? `sqlite:${join(dir, 'palmid.db')}`,
    PALMID_KEY_FILE: join(dir, 'master.key'),
    PALMID_ENV: 'development',
    ...env,
  });
  const matcher = new ExactMatcher();
  const ctx = await createContext(config, {
    matcher,
    gallery: new ExactGallery(),
    ...overrides,
    ...(now ? { now } : {}),
  });
  const app = await buildApp(ctx);
  await app.ready();
  return {
    app,
    ctx,
    dir,
    async close() {
      await app.close();
      await closeContext(ctx);
      await scratch?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function seedVendor(ctx: AppContext, name = 'Cafe X', scopes?: ('auth' | 'users')[]) {
  return createVendor(ctx.database.db, {
    name,
    url: `https://${name.toLowerCase().replace(/\W+/g, '-')}.example`,
    ...(scopes ? { scopes } : {}),
  });
}

export async function seedUser(ctx: AppContext) {
  const user = await createUser(ctx, ctx.database.db, null);
  const token = await issueUserToken(ctx, ctx.database.db, user.id);
  return { userId: user.id, token: token.user_token, ledgerId: user.ledgerId };
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
