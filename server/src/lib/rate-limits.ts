import { AppError } from '@palmid/contracts/errors';
import type { FastifyReply } from 'fastify';
import { type IRateLimiterRes, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

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
  /** Redis: the library's limiter (shared by every instance). */
  limiter?: RateLimiterRedis;
  /** In memory: counted synchronously (`MemoryWindow`). */
  memory?: MemoryWindow;
}

/**
 * One window counted in memory, the way rate-limiter-flexible's `RateLimiterMemory` counts (a key's window
 * starts at its first request and lasts `duration` seconds; past `points` requests the key is refused until
 * the window ends; a timer drops the key's count at the end of its window), but answered synchronously: an
 * authenticated request whose key is verified in memory then needs no promise at all (plugins/app/auth.ts,
 * docs/performance.md). The reset header's text is made once per key and window.
 */
export class MemoryWindow {
  readonly #counts = new Map<string, { n: number; endsAt: number; resetText: string }>();
  readonly #durationMs: number;
  readonly #limitText: string;

  constructor(
    readonly points: number,
    durationS: number,
  ) {
    this.#durationMs = durationS * 1000;
    this.#limitText = String(points);
  }

  consume(key: string, now: number): RateDecision {
    let c = this.#counts.get(key);
    if (c === undefined || c.endsAt <= now) {
      const endsAt = now + this.#durationMs;
      const fresh = { n: 0, endsAt, resetText: String(Math.ceil(endsAt / 1000)) };
      this.#counts.set(key, fresh);
      setTimeout(() => {
        if (this.#counts.get(key) === fresh) this.#counts.delete(key);
      }, this.#durationMs).unref();
      c = fresh;
    }
    c.n += 1;
    const ms = c.endsAt - now;
    return {
      limit: this.points,
      limitText: this.#limitText,
      remaining: Math.max(0, this.points - c.n),
      resetAt: Math.ceil(c.endsAt / 1000),
      resetText: c.resetText,
      allowed: c.n <= this.points,
      retryAfterS: Math.max(1, Math.ceil(ms / 1000)),
    };
  }

  /** Requests counted in `key`'s current window and ms until it ends, or undefined (none counted). */
  peek(key: string, now: number): { consumedPoints: number; msBeforeNext: number } | undefined {
    const c = this.#counts.get(key);
    if (c === undefined || c.endsAt <= now) return undefined;
    return { consumedPoints: c.n, msBeforeNext: c.endsAt - now };
  }
}

export interface RateDecision {
  limit: number;
  remaining: number;
  resetAt: number; // Unix seconds
  /** `resetAt` as the header's text, when the counter has it made already. */
  resetText?: string;
  /** `limit` as the header's text, when the counter has it made already. */
  limitText?: string;
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
      return redis
        ? {
            points,
            limiter: new RateLimiterRedis({ ...opts, storeClient: redis, rejectIfRedisNotReady: true }),
          }
        : { points, memory: new MemoryWindow(points, duration) };
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
      const res = w.memory ? w.memory.peek(key, Date.now()) : await w.limiter?.get(key);
      if (res && res.consumedPoints >= w.points)
        wait = Math.max(wait, Math.ceil((res.msBeforeNext ?? 0) / 1000));
    }
    return wait;
  }

  consume(bucket: RateBucket, key: string): Promise<RateDecision> {
    const now = this.consumeNow(bucket, key);
    if (now !== undefined) return Promise.resolve(now);
    const at = Date.now();
    const windows = this.#windows[bucket];
    if (windows.length === 1) return consumeOne(windows[0]!, key, at);
    return Promise.all(windows.map((w) => consumeOne(w, key, at))).then(closest);
  }

  /**
   * The same count as `consume`, answered synchronously when the bucket is counted in memory (no Redis);
   * undefined, counting nothing, when it is counted in Redis (then use `consume`).
   */
  consumeNow(bucket: RateBucket, key: string): RateDecision | undefined {
    const windows = this.#windows[bucket];
    const first = windows[0]!.memory;
    if (first === undefined) return undefined;
    const now = Date.now();
    if (windows.length === 1) return first.consume(key, now);
    return closest(windows.map((w) => (w.memory as MemoryWindow).consume(key, now)));
  }
}

/** The headers describe the window closest to exhaustion; a refusal by any window wins. */
function closest(decisions: RateDecision[]): RateDecision {
  const refused = decisions.filter((d) => !d.allowed).sort((a, b) => b.retryAfterS - a.retryAfterS)[0];
  if (refused) return refused;
  return decisions.sort((a, b) => a.remaining / a.limit - b.remaining / b.limit)[0]!;
}

/** One Redis window's count (one promise). */
function consumeOne(w: Window, key: string, now: number): Promise<RateDecision> {
  return (w.limiter as RateLimiterRedis).consume(key).then(
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

/**
 * Sets the rate-limit headers. Names in lower case: Fastify lower-cases every name it is given (and sends
 * them so), and an already lower-case name costs no new string per request (docs/performance.md).
 */
export function applyRateDecision(reply: FastifyReply, d: RateDecision): void {
  reply.header('x-ratelimit-limit', d.limitText ?? String(d.limit));
  reply.header('x-ratelimit-remaining', String(d.remaining));
  reply.header('x-ratelimit-reset', d.resetText ?? String(d.resetAt));
  if (!d.allowed) {
    reply.header('Retry-After', String(d.retryAfterS));
    throw new AppError('RATE_LIMITED', 'Too many requests', {
      reason: 'rate_limited',
      retry_after_s: d.retryAfterS,
    });
  }
}
