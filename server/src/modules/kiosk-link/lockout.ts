import type { Db } from '../../db/index.ts';

/**
 * Repeated failed palm matches on one kiosk lock it out for a while (brute-force presentation defence):
 * MAX_FAILURES failures (no_match or liveness_failed) within WINDOW_MS lock the kiosk for LOCK_MS.
 *
 * The failures and the lock live in the database (`kiosk_lockouts`), so neither a server restart nor a
 * reconnect to another instance clears them. Attempts in flight are counted in memory: a kiosk has one
 * socket, to one instance.
 */
export const MAX_FAILURES = 5;
export const WINDOW_MS = 60_000;
export const LOCK_MS = 120_000;

interface LockState {
  failures: number[];
  lockedUntil: number;
}

export class KioskLockout {
  readonly #inFlight = new Map<string, number>();
  /** Serialises the read-modify-write of one kiosk's row within this process. */
  readonly #queue = new Map<string, Promise<unknown>>();

  constructor(private readonly db: Db) {}

  /**
   * Admits one attempt, or returns how many ms to wait. Attempts still in flight count as possible failures,
   * so a burst of parallel identify requests cannot slip past the counter before the first one is recorded.
   * An admitted attempt must be settled exactly once.
   */
  async admit(pvsId: string, now: number): Promise<number> {
    const inFlight = this.#inFlight.get(pvsId) ?? 0;
    // reserve the slot before the first await, so parallel calls see each other
    this.#inFlight.set(pvsId, inFlight + 1);
    const state = await this.#load(pvsId);
    const wait =
      state.lockedUntil > now
        ? state.lockedUntil - now
        : state.failures.filter((t) => t > now - WINDOW_MS).length + inFlight >= MAX_FAILURES
          ? 1000
          : 0;
    if (wait > 0) this.#release(pvsId);
    return wait;
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
    const { lockedUntil } = await this.#load(pvsId);
    return lockedUntil > now ? lockedUntil - now : 0;
  }

  record(pvsId: string, failed: boolean, now: number): Promise<void> {
    return this.#serial(pvsId, async () => {
      const state = await this.#load(pvsId);
      if (!failed) {
        if (state.failures.length > 0)
          await this.#save(pvsId, { failures: [], lockedUntil: state.lockedUntil });
        return;
      }
      const recent = state.failures.filter((t) => t > now - WINDOW_MS);
      recent.push(now);
      await this.#save(
        pvsId,
        recent.length >= MAX_FAILURES
          ? { failures: [], lockedUntil: now + LOCK_MS }
          : { failures: recent, lockedUntil: state.lockedUntil },
      );
    });
  }

  #release(pvsId: string): void {
    const left = (this.#inFlight.get(pvsId) ?? 1) - 1;
    if (left > 0) this.#inFlight.set(pvsId, left);
    else this.#inFlight.delete(pvsId);
  }

  async #serial<T>(pvsId: string, fn: () => Promise<T>): Promise<T> {
    const before = this.#queue.get(pvsId) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.#queue.set(pvsId, tail);
    try {
      return await run;
    } finally {
      if (this.#queue.get(pvsId) === tail) this.#queue.delete(pvsId);
    }
  }

  async #load(pvsId: string): Promise<LockState> {
    const row = await this.db
      .selectFrom('kiosk_lockouts')
      .select(['failures', 'locked_until'])
      .where('pvs_id', '=', pvsId)
      .executeTakeFirst();
    if (!row) return { failures: [], lockedUntil: 0 };
    return { failures: JSON.parse(row.failures) as number[], lockedUntil: Number(row.locked_until) };
  }

  async #save(pvsId: string, s: LockState): Promise<void> {
    const values = { failures: JSON.stringify(s.failures), locked_until: s.lockedUntil };
    await this.db
      .insertInto('kiosk_lockouts')
      .values({ pvs_id: pvsId, ...values })
      .onConflict((oc) => oc.column('pvs_id').doUpdateSet(values))
      .execute();
  }
}
