import type { UserCandidate } from './types.ts';

/** Most users a search may return. */
export const MAX_SEARCH_USERS = 32;

/**
 * The closest `k` different users of a scan, kept in preallocated arrays (no allocation per
 * compared palm): `offer` costs one comparison with the current worst for almost every palm.
 * Palms are identified by their index in the caller's store; `userOf` maps an index to its user.
 */
export class TopUsers {
  private readonly index = new Int32Array(MAX_SEARCH_USERS);
  private readonly dist = new Float64Array(MAX_SEARCH_USERS);
  private k = 2;
  private n = 0;
  /** Distance a palm must beat to enter (the worst kept once full). */
  worst = Number.POSITIVE_INFINITY;

  reset(k: number): void {
    this.k = Math.max(1, Math.min(MAX_SEARCH_USERS, Math.floor(k)));
    this.n = 0;
    this.worst = Number.POSITIVE_INFINITY;
  }

  /** Offers palm `i` of user `user` at distance `d`; `users` holds every palm's user by index. */
  offer(i: number, d: number, users: readonly string[]): void {
    if (d >= this.worst) return;
    const user = users[i];
    const idx = this.index;
    const dist = this.dist;
    let n = this.n;
    // the same user already kept: keep its closer palm only
    let at = -1;
    for (let j = 0; j < n; j++)
      if (users[idx[j]!] === user) {
        at = j;
        break;
      }
    if (at >= 0) {
      if (d >= dist[at]!) return;
    } else if (n < this.k) {
      at = n++;
      this.n = n;
    } else {
      at = n - 1; // replaces the worst user
    }
    // move the entry up to keep the list sorted, closest first
    while (at > 0 && dist[at - 1]! > d) {
      idx[at] = idx[at - 1]!;
      dist[at] = dist[at - 1]!;
      at--;
    }
    idx[at] = i;
    dist[at] = d;
    if (n === this.k) this.worst = dist[n - 1]!;
  }

  /** The kept users, closest first. */
  read(users: readonly string[], palms: readonly string[]): UserCandidate[] {
    const out: UserCandidate[] = [];
    for (let j = 0; j < this.n; j++) {
      const i = this.index[j]!;
      out.push({ userId: users[i]!, palmId: palms[i]!, distance: this.dist[j]! });
    }
    return out;
  }
}
