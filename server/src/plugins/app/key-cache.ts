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
 * for the requests that follow: on SQLite from the next event-loop turn (at once for this process's own
 * changes), on PostgreSQL once the change's notification is read. Only successes are cached: a refused key
 * always reaches the database (and the failed-credential budget).
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

  /**
   * The principal of `apiKey` if it is verified in memory under the current epoch, else undefined (then
   * `remember` looks it up). Synchronous: an authenticated request on a hit costs no promise.
   */
  cached(apiKey: unknown): VendorPrincipal | undefined {
    const epoch = this.watch.epoch();
    if (epoch === undefined || typeof apiKey !== 'string') return undefined;
    if (epoch !== this.#epoch) {
      this.#entries.clear();
      this.#epoch = epoch;
      return undefined;
    }
    const id = hashSecret(apiKey);
    const hit = this.#entries.get(id);
    if (hit === undefined) return undefined;
    if (hit.epoch === epoch && hit.expiresAt > this.now()) return hit.principal;
    this.#entries.delete(id);
    return undefined;
  }

  /**
   * The miss path, for a caller that has just asked `cached`: looks the key up with `verify` and keeps the
   * result unless the credentials changed while it ran.
   */
  async remember(apiKey: unknown, verify: () => Promise<VendorPrincipal>): Promise<VendorPrincipal> {
    // Read before the lookup: a change committed after this read moves the epoch away from the stamp.
    const epoch = this.watch.epoch();
    if (epoch === undefined || typeof apiKey !== 'string') return verify();
    const now = this.now();
    const principal = await verify();
    // A change announced while the lookup ran moved the epoch: this result may predate it, so it is not kept.
    if (this.watch.epoch() === epoch && epoch === this.#epoch) {
      if (this.#entries.size >= this.max) {
        const oldest = this.#entries.keys().next().value;
        if (oldest !== undefined) this.#entries.delete(oldest);
      }
      this.#entries.set(hashSecret(apiKey), { principal, epoch, expiresAt: now + this.ttlMs });
    }
    return principal;
  }

  get size(): number {
    return this.#entries.size;
  }
}
