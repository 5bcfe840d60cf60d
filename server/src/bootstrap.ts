import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Gallery, Matcher } from '@palmid/palm/gallery/types';
import type { TemplateCoding } from '@palmid/palm/template';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import { Keyring, loadMasterKey } from './crypto/keyring.ts';
import { openDatabase } from './db/index.ts';
import { type EventHub, LocalEventHub } from './lib/event-hub.ts';
import { KioskRegistry } from './lib/kiosk-registry.ts';
import { LiveSockets } from './lib/live-sockets.ts';
import { enrolmentLimits, RateLimits } from './lib/rate-limits.ts';
import { RedisEventHub } from './lib/redis-event-hub.ts';
import { authHistory } from './modules/auth-contexts/service.ts';
import { RevocationWatcher } from './modules/revocation/watcher.ts';
import { loadGallery, syncGalleryWithPeers } from './modules/users/gallery.ts';
import { authenticateUser } from './modules/users/service.ts';
import { authenticateVendor } from './modules/vendors/service.ts';

/** The deployed revision: PALMID_VERSION if baked in, else the git revision, else the package version. */
export function resolveVersion(): string {
  if (process.env.PALMID_VERSION) return process.env.PALMID_VERSION;
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    return pkg.version;
  }
}

export interface ContextOverrides {
  matcher?: Matcher;
  gallery?: Gallery;
  events?: EventHub;
  now?: () => number;
}

async function defaultMatching(
  threshold: number,
  targetFpir: number,
  coding: TemplateCoding,
): Promise<{ matcher: Matcher; gallery: Gallery }> {
  const mod = await import('./modules/matching/index.ts');
  const matcher = mod.createMatcher({ threshold, coding });
  return { matcher, gallery: mod.createGallery(matcher, { threshold, coding, policy: { targetFpir } }) };
}

/** Opens everything a server (or the admin CLI) needs. The caller owns `closeContext`. */
export async function createContext(config: Config, overrides: ContextOverrides = {}): Promise<AppContext> {
  const database = await openDatabase(config.DATABASE_URL);
  const keyring = new Keyring(loadMasterKey(config.PALMID_MASTER_KEY, config.PALMID_KEY_FILE));
  let redis: import('ioredis').Redis | undefined;
  let events = overrides.events;
  if (config.REDIS_URL) {
    const { Redis } = await import('ioredis');
    redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
    // With Redis, events cross instances: a kiosk on one instance serves contexts whose vendor listens on another.
    events ??= await RedisEventHub.connect(redis);
  }
  const matching =
    overrides.matcher && overrides.gallery
      ? { matcher: overrides.matcher, gallery: overrides.gallery }
      : await defaultMatching(
          config.PALMID_MATCH_THRESHOLD,
          config.PALMID_TARGET_FPIR,
          config.PALMID_TEMPLATE_CODING,
        );
  const hub = events ?? new LocalEventHub();
  const sockets = new LiveSockets();
  const ctx: AppContext = {
    config,
    database,
    keyring,
    ...matching,
    events: hub,
    kiosks: new KioskRegistry(),
    sockets,
    revocations: new RevocationWatcher(database.db, hub, sockets, config.PALMID_REVOCATION_POLL_MS),
    rateLimits: new RateLimits(
      redis,
      enrolmentLimits(config.PALMID_ENROL_PER_MIN, config.PALMID_ENROL_PER_DAY),
    ),
    credentials: {
      vendor: (apiKey) => authenticateVendor(database.db, apiKey, config.PALMID_ENV),
      user: (header) => authenticateUser(ctx, header),
    },
    authHistory,
    version: resolveVersion(),
    startedAt: Date.now(),
    now: overrides.now ?? Date.now,
    redis,
  };
  const loaded = loadGallery(ctx);
  syncGalleryWithPeers(ctx, loaded, (err) =>
    process.emitWarning(`gallery sync from another instance failed: ${(err as Error).message}`),
  );
  await loaded;
  ctx.revocations.start();
  return ctx;
}

export async function closeContext(ctx: AppContext): Promise<void> {
  ctx.revocations.stop();
  await ctx.events.close();
  const redis = ctx.redis as { quit?: () => Promise<unknown> } | undefined;
  await redis?.quit?.();
  await ctx.database.close();
}
