import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '@palmid/shared/errors.ts';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { type ContextOverrides, closeContext, createContext } from './bootstrap.ts';
import { type Config, loadConfig } from './config.ts';
import type { AppContext } from './context.ts';
import { createScratchDatabase, type ScratchDatabase } from './db/scratch.ts';
import type { Gallery, GalleryEntry, IdentifyHit, Matcher } from './modules/matching/types.ts';
import { createUser, issueUserToken } from './modules/users/service.ts';
import { createVendor } from './modules/vendors/service.ts';

/**
 * Test doubles for the palm matcher: templates are equal or not. The real matcher has its own tests;
 * domain tests only need a deterministic identify().
 */
export class ExactMatcher implements Matcher {
  validate(template: Uint8Array): void {
    if (template.length < 4 || template.length > 1024) {
      throw new AppError('INVALID_REQUEST', 'Malformed template', { field: 'template', reason: 'malformed' });
    }
  }
  verify(a: Uint8Array, b: Uint8Array) {
    const match = Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
    return { score: match ? 1 : 0, match };
  }
}

export class ExactGallery implements Gallery {
  readonly entries: GalleryEntry[] = [];
  add(entry: GalleryEntry): void {
    this.entries.push(entry);
  }
  removeUser(userId: string): void {
    for (let i = this.entries.length - 1; i >= 0; i--)
      if (this.entries[i]!.userId === userId) this.entries.splice(i, 1);
  }
  identify(template: Uint8Array): IdentifyHit | null {
    const hit = this.entries.find(
      (e) => Buffer.compare(Buffer.from(e.template), Buffer.from(template)) === 0,
    );
    return hit ? { userId: hit.userId, palmId: hit.palmId, score: 1 } : null;
  }
  get size(): number {
    return this.entries.length;
  }
}

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
