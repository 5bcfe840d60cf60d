import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '@palmid/shared/errors.ts';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { closeContext, createContext } from './bootstrap.ts';
import { type Config, loadConfig } from './config.ts';
import type { AppContext } from './context.ts';
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

export async function createTestApp(
  env: Partial<Record<keyof Config, string>> = {},
  now?: () => number,
): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-test-'));
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, 'palmid.db')}`,
    PALMID_KEY_FILE: join(dir, 'master.key'),
    PALMID_ENV: 'development',
    ...env,
  });
  const matcher = new ExactMatcher();
  const ctx = await createContext(config, { matcher, gallery: new ExactGallery(), ...(now ? { now } : {}) });
  const app = await buildApp(ctx);
  await app.ready();
  return {
    app,
    ctx,
    dir,
    async close() {
      await app.close();
      await closeContext(ctx);
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
