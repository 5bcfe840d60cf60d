import type { VendorPrincipal } from '../../context.ts';
import { hashSecret } from '../../crypto/secrets.ts';
import type { CredentialWatch } from '../../db/credential-watch.ts';

/** A verified key is trusted from memory this long at most, even if no change is ever announced. */
export const KEY_CACHE_TTL_MS = 30_000;
export const KEY_CACHE_MAX = 10_000;

interface Entry {
  principal: VendorPrincipal;
  epoch: number;
  expiresAt: number;
}

/**
 * Verified API keys, kept briefly so that an authenticated request costs one hash and one map lookup instead
 * of a database join (docs/performance.md). Entries are keyed by the key's SHA-256 (never the key itself) and
 * stamped with the credential epoch read *before* the database lookup that verified them; any change to
 * `api_keys` or `vendors`, in any process, moves the epoch (db/credential-watch.ts) and so empties the cache
 * before the next request is answered. Only successes are cached: a refused key always reaches the database
 * (and the failed-credential budget).
 */
export class VerifiedKeyCache {
  readonly #entries = new Map<string, Entry>();
  #epoch: number | undefined;

  constructor(
    private readonly watch: CredentialWatch,
    private readonly now: () => number = Date.now,
    private readonly ttlMs = KEY_CACHE_TTL_MS,
    private readonly max = KEY_CACHE_MAX,
  ) {}

  async authenticate(apiKey: unknown, verify: () => Promise<VendorPrincipal>): Promise<VendorPrincipal> {
    const epoch = this.watch.epoch();
    if (epoch === undefined || typeof apiKey !== 'string') return verify();
    if (epoch !== this.#epoch) {
      this.#entries.clear();
      this.#epoch = epoch;
    }
    const id = hashSecret(apiKey);
    const hit = this.#entries.get(id);
    const now = this.now();
    if (hit && hit.epoch === epoch && hit.expiresAt > now) return hit.principal;
    if (hit) this.#entries.delete(id);
    const principal = await verify();
    // A change announced while the lookup ran moved the epoch: this result may predate it, so it is not kept.
    if (this.watch.epoch() === epoch) {
      if (this.#entries.size >= this.max) {
        const oldest = this.#entries.keys().next().value;
        if (oldest !== undefined) this.#entries.delete(oldest);
      }
      this.#entries.set(id, { principal, epoch, expiresAt: now + this.ttlMs });
    }
    return principal;
  }

  get size(): number {
    return this.#entries.size;
  }
}
