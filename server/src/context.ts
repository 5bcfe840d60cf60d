import type { Gallery, Matcher } from '@palmid/palm/gallery/types';
import type { Config } from './config.ts';
import type { Keyring } from './crypto/keyring.ts';
import type { Database, Db } from './db/index.ts';
import type { EventHub } from './lib/event-hub.ts';
import type { KioskRegistry } from './lib/kiosk-registry.ts';
import type { LiveSockets, RevocationCheck } from './lib/live-sockets.ts';
import type { RateLimits } from './lib/rate-limits.ts';

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
  revocations: RevocationCheck;
  rateLimits: RateLimits;
  /** Who a credential belongs to (modules/vendors, modules/users), handed to the auth plugin so plugins import no module. */
  credentials: CredentialLookup;
  /**
   * A user's resolved authentications since a time (modules/auth-contexts), handed to modules/attributes for
   * the computed `risk_score` so attributes imports no auth-contexts.
   */
  authHistory: AuthHistory;
  version: string;
  startedAt: number;
  now: () => number;
  /** ioredis client when REDIS_URL is set. */
  redis?: unknown;
}

/** One resolved authentication attributed to a user: the input of the computed `risk_score`. */
export interface AuthHistoryItem {
  status: 'completed' | 'failed';
  at: number;
}

/** The resolved authentications attributed to a user since `sinceMs`, read through `db` (which may be a transaction). */
export type AuthHistory = (db: Db, userId: string, sinceMs: number) => Promise<AuthHistoryItem[]>;

export const VENDOR_SCOPES = ['auth', 'users'] as const;
export type VendorScope = (typeof VENDOR_SCOPES)[number];

export interface CredentialLookup {
  /** The vendor of an `X-API-Key` value; throws UNAUTHORIZED. */
  vendor(apiKey: unknown): Promise<VendorPrincipal>;
  /** The user of an `Authorization: Bearer` value; throws UNAUTHORIZED. */
  user(header: unknown): Promise<UserPrincipal>;
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
