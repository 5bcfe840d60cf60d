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
