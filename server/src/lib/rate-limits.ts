import { AppError } from '@palmid/shared/errors.ts';
import type { FastifyReply } from 'fastify';
import {
  type IRateLimiterRes,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';

/** Limits per bucket (docs/vendor-api.md, "Rate limits"); each bucket may have several windows (the ledger has two). */
export const RATE_LIMITS = {
  auth: [{ points: 100, duration: 60 }],
  users: [{ points: 50, duration: 60 }],
  health: [{ points: 1000, duration: 60 }],
  ledger: [
    { points: 50, duration: 60 },
    { points: 500, duration: 3600 },
  ],
  user: [{ points: 60, duration: 60 }],
  status: [{ points: 100, duration: 60 }],
  pvs: [{ points: 600, duration: 60 }],
  /** POST /v1/session per client IP: slows claim-code guessing (≈ 50-bit codes, 15-minute lifetime). */
  session: [{ points: 10, duration: 60 }],
  /**
   * Failed credential checks (API key, user token, kiosk key) per client IP, on REST and WebSocket
   * alike. Past the budget the IP is refused with 429 before any lookup until the window ends, so an
   * invalid-key flood costs neither database lookups nor hashing.
   */
  credentials: [{ points: 30, duration: 60 }],
  /**
   * Enrolments per capture device (docs/security.md); `PALMID_ENROL_PER_MIN` and `PALMID_ENROL_PER_DAY`
   * override these defaults (`enrolmentLimits`).
   */
  enrol: [
    { points: 10, duration: 60 },
    { points: 200, duration: 86_400 },
  ],
} as const;

/** The limits with the configured enrolment budget. */
export function enrolmentLimits(perMinute: number, perDay: number) {
  return {
    ...RATE_LIMITS,
    enrol: [
      { points: perMinute, duration: 60 },
      { points: perDay, duration: 86_400 },
    ],
  };
}

export type RateBucket = keyof typeof RATE_LIMITS;

interface Window {
  points: number;
  limiter: RateLimiterMemory | RateLimiterRedis;
}

export interface RateDecision {
  limit: number;
  remaining: number;
  resetAt: number; // Unix seconds
  allowed: boolean;
  retryAfterS: number;
}

/**
 * Counters live in memory, or in Redis when REDIS_URL is set so that every instance shares them.
 * Redis counting is atomic (INCR + EXPIRE in one script), so concurrent instances never admit more than
 * the limit.
 */
export class RateLimits {
  readonly #windows: Record<RateBucket, Window[]>;

  constructor(
    // biome-ignore lint/suspicious/noExplicitAny: ioredis client type is optional at this layer
    redis?: any,
    limits: Record<RateBucket, readonly { points: number; duration: number }[]> = RATE_LIMITS,
  ) {
    const make = (bucket: string, points: number, duration: number): Window => {
      const opts = { points, duration, keyPrefix: `palmid:rl:${bucket}:${duration}` };
      return {
        points,
        limiter: redis
          ? new RateLimiterRedis({ ...opts, storeClient: redis, rejectIfRedisNotReady: true })
          : new RateLimiterMemory(opts),
      };
    };
    this.#windows = Object.fromEntries(
      Object.entries(limits).map(([bucket, windows]) => [
        bucket,
        windows.map((w) => make(bucket, w.points, w.duration)),
      ]),
    ) as Record<RateBucket, Window[]>;
  }

  /** Seconds until `key` may try again in `bucket` (0 when within budget); consumes nothing. */
  async blockedFor(bucket: RateBucket, key: string): Promise<number> {
    let wait = 0;
    for (const w of this.#windows[bucket]) {
      const res = await w.limiter.get(key);
      if (res && res.consumedPoints >= w.points)
        wait = Math.max(wait, Math.ceil((res.msBeforeNext ?? 0) / 1000));
    }
    return wait;
  }

  consume(bucket: RateBucket, key: string): Promise<RateDecision> {
    const now = Date.now();
    const windows = this.#windows[bucket];
    if (windows.length === 1) return consumeOne(windows[0]!, key, now);
    return Promise.all(windows.map((w) => consumeOne(w, key, now))).then((decisions) => {
      // The headers describe the window closest to exhaustion; a refusal by any window wins.
      const refused = decisions.filter((d) => !d.allowed).sort((a, b) => b.retryAfterS - a.retryAfterS)[0];
      if (refused) return refused;
      return decisions.sort((a, b) => a.remaining / a.limit - b.remaining / b.limit)[0]!;
    });
  }
}

/** One window's count (one promise: every rate-limited request comes through here). */
function consumeOne(w: Window, key: string, now: number): Promise<RateDecision> {
  return w.limiter.consume(key).then(
    (res) => decide(w, res, now, true),
    (err: unknown) => {
      if (!(err instanceof RateLimiterRes)) throw err;
      return decide(w, err, now, false);
    },
  );
}

function decide(w: Window, res: IRateLimiterRes, now: number, allowed: boolean): RateDecision {
  const ms = res.msBeforeNext ?? 0;
  return {
    limit: w.points,
    remaining: Math.max(0, res.remainingPoints ?? 0),
    resetAt: Math.ceil((now + ms) / 1000),
    allowed,
    retryAfterS: Math.max(1, Math.ceil(ms / 1000)),
  };
}

export function applyRateDecision(reply: FastifyReply, d: RateDecision): void {
  reply.header('X-RateLimit-Limit', String(d.limit));
  reply.header('X-RateLimit-Remaining', String(d.remaining));
  reply.header('X-RateLimit-Reset', String(d.resetAt));
  if (!d.allowed) {
    reply.header('Retry-After', String(d.retryAfterS));
    throw new AppError('RATE_LIMITED', 'Too many requests', {
      reason: 'rate_limited',
      retry_after_s: d.retryAfterS,
    });
  }
}
