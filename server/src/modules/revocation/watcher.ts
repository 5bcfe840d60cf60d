import { AppError } from '@palmid/contracts/errors';
import type { Db } from '../../db/index.ts';
import type { EventHub, HubEvents } from '../../lib/event-hub.ts';
import type { CredentialKind, LiveSockets, RevocationCheck } from '../../lib/live-sockets.ts';
import { RedisEventHub } from '../../lib/redis-event-hub.ts';
import { pvsActive, revokedPvsAmong } from '../pvs/service.ts';
import { apiKeyActive, revokedKeysAmong } from '../vendors/service.ts';

/**
 * Revocation is immediate (docs/security.md): a revoked kiosk token or vendor key loses every open
 * `/ws/pvs` and `/ws/vendor` socket on every instance, closed with 1008 `revoked`, and nothing is
 * delivered to it after the revocation. Revocations are written by the admin CLI, another process on the
 * same database, so the running servers learn of them three ways:
 *
 * - the database is the truth: before anything is delivered on a socket (a `scan.request`, an
 *   `auth.updated`, an answer) its credential is checked (`isLive`), so nothing leaves after the
 *   revocation has committed, whichever instance holds the socket;
 * - every `pollMs` the credentials of this instance's open sockets are checked in one query per kind,
 *   which closes idle sockets within `pollMs` even without Redis (a single SQLite instance);
 * - with `REDIS_URL` the CLI announces the revocation on the event hub (`credential.revoked`) and every
 *   instance checks at once.
 */
export class RevocationWatcher implements RevocationCheck {
  #timer: NodeJS.Timeout | undefined;
  #off: (() => void) | undefined;
  #sweeping: Promise<void> | undefined;
  #again = false;

  constructor(
    private readonly db: Db,
    private readonly events: EventHub,
    private readonly sockets: LiveSockets,
    private readonly pollMs: number,
    private readonly onError: (err: unknown) => void = (err) =>
      process.emitWarning(`revocation check failed: ${(err as Error)?.message}`),
  ) {}

  start(): void {
    if (this.#timer) return;
    this.#off = this.events.subscribe('credential.revoked', () => void this.sweep());
    this.#timer = setInterval(() => {
      if (this.sockets.size > 0) void this.sweep();
    }, this.pollMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#off?.();
  }

  /** Whether the credential may still be served; a revoked one has its sockets closed on the spot. */
  async isLive(kind: CredentialKind, id: string): Promise<boolean> {
    const live = kind === 'pvs' ? await pvsActive(this.db, id) : await apiKeyActive(this.db, id);
    if (!live) this.sockets.revoke(kind, id);
    return live;
  }

  /** Checks every credential with an open socket here; one sweep at a time, a request meanwhile reruns it. */
  sweep(): Promise<void> {
    if (this.#sweeping) {
      this.#again = true;
      return this.#sweeping;
    }
    this.#sweeping = (async () => {
      do {
        this.#again = false;
        try {
          for (const id of await revokedPvsAmong(this.db, this.sockets.ids('pvs')))
            this.sockets.revoke('pvs', id);
          for (const id of await revokedKeysAmong(this.db, this.sockets.ids('api_key')))
            this.sockets.revoke('api_key', id);
        } catch (err) {
          this.onError(err);
        }
      } while (this.#again);
    })().finally(() => {
      this.#sweeping = undefined;
    });
    return this.#sweeping;
  }
}

/**
 * Tells running servers about a revocation made outside them (the admin CLI). With Redis they hear it
 * at once on the event hub; without, they find it at their next poll. Never throws: the revocation is
 * already committed, and the poll finds it anyway.
 */
export async function announceRevocation(
  redisUrl: string | undefined,
  event: HubEvents['credential.revoked'],
): Promise<void> {
  if (!redisUrl) return;
  const { Redis } = await import('ioredis');
  const client = new Redis(redisUrl, {
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  const announce = async () => {
    await client.connect();
    const hub = await RedisEventHub.connect(client, { onError: () => undefined });
    hub.publish('credential.revoked', event);
    await hub.close();
    await client.quit();
  };
  let timer: NodeJS.Timeout | undefined;
  const giveUp = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ANNOUNCE_TIMEOUT_MS);
  });
  try {
    await Promise.race([announce(), giveUp]);
  } catch {
    // Redis unreachable: the servers' poll finds the revocation.
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}

/** The admin CLI waits at most this long for Redis before leaving the news to the servers' poll. */
const ANNOUNCE_TIMEOUT_MS = 3000;

/**
 * Wraps a socket's RPC handlers so that a revoked credential is served nothing: its credential is
 * checked before the handler runs and again before the answer leaves. A revoked one has its sockets
 * closed (1008 `revoked`) and the request fails; the closed socket carries no answer.
 */
export function guardHandlers<H extends object>(handlers: H, live: () => Promise<boolean>): H {
  const revoked = () =>
    new AppError('UNAUTHORIZED', 'The credential of this connection was revoked', { reason: 'revoked' });
  const out: Record<string, (params: unknown, id: string) => Promise<unknown>> = {};
  for (const [name, handler] of Object.entries(handlers) as [
    string,
    (params: unknown, id: string) => Promise<unknown>,
  ][]) {
    out[name] = async (params, id) => {
      if (!(await live())) throw revoked();
      const result = await handler(params, id);
      if (!(await live())) throw revoked();
      return result;
    };
  }
  return out as H;
}
