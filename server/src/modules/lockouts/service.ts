import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { Db } from '../../db/index.ts';
import { lockoutStore } from './store.ts';

/**
 * Repeated failed palm matches on one kiosk lock it out for a while (brute-force presentation defence,
 * docs/reliability.md): MAX_FAILURES failures (no_match or liveness_failed) within WINDOW_MS lock the
 * kiosk for LOCK_MS.
 *
 * The failures are counted by rate-limiter-flexible: in Redis when REDIS_URL is set, so every instance
 * counts together, else in this process. The lock itself is stored in the database (`kiosk_lockouts`),
 * so neither a server restart nor a reconnect to another instance clears it. Attempts in flight are
 * counted in memory: a kiosk has one socket, to one instance.
 */
export const MAX_FAILURES = 5;
export const WINDOW_MS = 60_000;
export const LOCK_MS = 120_000;

/**
 * What one resolution counts for the lockout: a failed match (`no_match`, `liveness_failed`) counts, only a
 * genuine match (a user was identified) clears the count, and anything else (`attestation_failed`, an
 * expired or cancelled context, a stored answer replayed) leaves it as it is: a run of refused captures
 * between misses must not reset the count (docs/security.md).
 */
export function lockoutOutcome(
  reason: string | undefined,
  identifiedUserId: string | null | undefined,
): boolean | undefined {
  if (reason === 'no_match' || reason === 'liveness_failed') return true;
  return identifiedUserId ? false : undefined;
}

export class KioskLockout {
  readonly #inFlight = new Map<string, number>();
  readonly #failures: RateLimiterAbstract;

  /** `redis`: the ioredis client of the process (AppContext.redis), when there is one. */
  constructor(
    private readonly db: Db,
    redis?: unknown,
  ) {
    const opts = { points: MAX_FAILURES, duration: WINDOW_MS / 1000, keyPrefix: 'palmid:kiosk-failures' };
    this.#failures = redis
      ? new RateLimiterRedis({ ...opts, storeClient: redis, rejectIfRedisNotReady: true })
      : new RateLimiterMemory(opts);
  }

  /**
   * Admits one attempt, or returns how many ms to wait. Attempts still in flight count as possible failures,
   * so a burst of parallel identify requests cannot slip past the counter before the first one is recorded.
   * An admitted attempt must be settled exactly once.
   */
  async admit(pvsId: string, now: number): Promise<number> {
    const inFlight = this.#inFlight.get(pvsId) ?? 0;
    // reserve the slot before the first await, so parallel calls see each other
    this.#inFlight.set(pvsId, inFlight + 1);
    try {
      const lockedUntil = await this.#lockedUntil(pvsId);
      const failures = (await this.#failures.get(pvsId))?.consumedPoints ?? 0;
      const wait = lockedUntil > now ? lockedUntil - now : failures + inFlight >= MAX_FAILURES ? 1000 : 0;
      if (wait > 0) this.#release(pvsId);
      return wait;
    } catch (err) {
      this.#release(pvsId);
      throw err;
    }
  }

  /** Ends an admitted attempt: `failed` true/false records the outcome, undefined records nothing. */
  async settle(pvsId: string, failed: boolean | undefined, now: number): Promise<void> {
    try {
      if (failed !== undefined) await this.record(pvsId, failed, now);
    } finally {
      this.#release(pvsId);
    }
  }

  async lockedFor(pvsId: string, now: number): Promise<number> {
    const lockedUntil = await this.#lockedUntil(pvsId);
    return lockedUntil > now ? lockedUntil - now : 0;
  }

  /** A genuine match clears the count; the failure that reaches MAX_FAILURES locks the kiosk. */
  async record(pvsId: string, failed: boolean, now: number): Promise<void> {
    if (!failed) {
      await this.#failures.delete(pvsId);
      return;
    }
    const res = await this.#failures.consume(pvsId).catch((rejected: unknown) => {
      if (rejected instanceof RateLimiterRes) return rejected; // over the limit: lock again
      throw rejected;
    });
    if (res.consumedPoints < MAX_FAILURES) return;
    await this.#lock(pvsId, now + LOCK_MS);
    await this.#failures.delete(pvsId);
  }

  #release(pvsId: string): void {
    const left = (this.#inFlight.get(pvsId) ?? 1) - 1;
    if (left > 0) this.#inFlight.set(pvsId, left);
    else this.#inFlight.delete(pvsId);
  }

  async #lockedUntil(pvsId: string): Promise<number> {
    return lockoutStore(this.db).lockedUntil(pvsId);
  }

  async #lock(pvsId: string, until: number): Promise<void> {
    await lockoutStore(this.db).lock(pvsId, until);
  }
}
