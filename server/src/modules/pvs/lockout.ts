/**
 * Repeated failed palm matches on one kiosk lock it out for a while (brute-force presentation defence):
 * MAX_FAILURES failures (no_match or liveness_failed) within WINDOW_MS lock the kiosk for LOCK_MS.
 */
export const MAX_FAILURES = 5;
export const WINDOW_MS = 60_000;
export const LOCK_MS = 120_000;

export class KioskLockout {
  readonly #failures = new Map<string, number[]>();
  readonly #lockedUntil = new Map<string, number>();
  readonly #inFlight = new Map<string, number>();

  /**
   * Admits one attempt, or returns how many ms to wait. Attempts still in flight count as possible failures,
   * so a burst of parallel identify requests cannot slip past the counter before the first one is recorded.
   * An admitted attempt must be settled exactly once.
   */
  admit(pvsId: string, now: number): number {
    const locked = this.lockedFor(pvsId, now);
    if (locked > 0) return locked;
    const recent = (this.#failures.get(pvsId) ?? []).filter((t) => t > now - WINDOW_MS).length;
    const inFlight = this.#inFlight.get(pvsId) ?? 0;
    if (recent + inFlight >= MAX_FAILURES) return 1000;
    this.#inFlight.set(pvsId, inFlight + 1);
    return 0;
  }

  /** Ends an admitted attempt: `failed` true/false records the outcome, undefined records nothing. */
  settle(pvsId: string, failed: boolean | undefined, now: number): void {
    const inFlight = (this.#inFlight.get(pvsId) ?? 1) - 1;
    if (inFlight > 0) this.#inFlight.set(pvsId, inFlight);
    else this.#inFlight.delete(pvsId);
    if (failed !== undefined) this.record(pvsId, failed, now);
  }

  lockedFor(pvsId: string, now: number): number {
    const until = this.#lockedUntil.get(pvsId) ?? 0;
    return until > now ? until - now : 0;
  }

  record(pvsId: string, failed: boolean, now: number): void {
    if (!failed) {
      this.#failures.delete(pvsId);
      return;
    }
    const recent = (this.#failures.get(pvsId) ?? []).filter((t) => t > now - WINDOW_MS);
    recent.push(now);
    if (recent.length >= MAX_FAILURES) {
      this.#lockedUntil.set(pvsId, now + LOCK_MS);
      this.#failures.delete(pvsId);
    } else {
      this.#failures.set(pvsId, recent);
    }
  }
}
