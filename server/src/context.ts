import type { Config } from './config.ts';
import type { Keyring } from './crypto/keyring.ts';
import type { Database } from './db/index.ts';
import type { EventHub } from './lib/event-hub.ts';
import type { KioskRegistry } from './lib/kiosk-registry.ts';
import type { LiveSockets } from './lib/live-sockets.ts';
import type { Gallery, Matcher } from './modules/matching/types.ts';
import type { RevocationWatcher } from './modules/revocation/watcher.ts';
import type { RateLimits } from './plugins/app/rate-limit.ts';

/** Everything a module needs, built once per process and handed to the app. */
export interface AppContext {
  config: Config;
  database: Database;
  keyring: Keyring;
  matcher: Matcher;
  gallery: Gallery;
  events: EventHub;
  kiosks: KioskRegistry;
  /** Open authenticated sockets by credential, and the watcher that closes those of revoked credentials. */
  sockets: LiveSockets;
  revocations: RevocationWatcher;
  rateLimits: RateLimits;
  version: string;
  startedAt: number;
  now: () => number;
  /** ioredis client when REDIS_URL is set. */
  redis?: unknown;
}

export interface VendorPrincipal {
  id: string;
  name: string;
  url: string;
  mode: 'test' | 'live';
  scopes: string[];
  keyId: string;
}

export interface UserPrincipal {
  id: string;
  tokenId: string;
}

export interface Caller {
  ip: string;
  userAgent: string;
}
