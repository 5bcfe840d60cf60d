/**
 * Exponential backoff with full jitter (AWS architecture blog's "full jitter"): the n-th retry waits a
 * uniformly random time in [0, min(cap, base · 2^n)], so a fleet of kiosks reconnecting after a server
 * restart spreads out instead of arriving together. A server-supplied retry-after wins when longer.
 */
export interface BackoffOptions {
  baseMs?: number;
  capMs?: number;
  random?: () => number;
}

export class Backoff {
  #attempt = 0;
  readonly #base: number;
  readonly #cap: number;
  readonly #random: () => number;

  constructor(opts: BackoffOptions = {}) {
    this.#base = opts.baseMs ?? 250;
    this.#cap = opts.capMs ?? 30_000;
    this.#random = opts.random ?? Math.random;
  }

  next(retryAfterMs = 0): number {
    const ceiling = Math.min(this.#cap, this.#base * 2 ** this.#attempt);
    this.#attempt = Math.min(this.#attempt + 1, 30);
    return Math.max(retryAfterMs, Math.floor(this.#random() * ceiling));
  }

  reset(): void {
    this.#attempt = 0;
  }

  get attempt(): number {
    return this.#attempt;
  }
}
