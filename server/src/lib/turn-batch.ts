interface Waiter<V> {
  resolve(value: V | undefined): void;
  reject(err: unknown): void;
}

/**
 * Loads by key, one query per event-loop turn: the keys asked for while a turn's I/O callbacks run (the
 * requests that arrived together) are fetched together when the turn ends (`setImmediate`), at most `max`
 * keys a query, and each caller gets its own value (docs/performance.md). A read made this way starts
 * after every caller asked for it, so it sees everything committed before any of those requests arrived;
 * under load it replaces dozens of identical one-row queries (each a PostgreSQL round trip, or a SQLite
 * read lock) by one. A key asked for twice in a turn is fetched once.
 *
 * While `maxInFlight` fetches are running, keys keep gathering and are fetched together when one of them
 * ends (as a group commit forms its next group): under load a batch holds every request that arrived during
 * a round trip, and an idle server still fetches at the end of the turn.
 */
export class TurnBatch<K, V> {
  #pending = new Map<K, Waiter<V>[]>();
  #scheduled = false;
  #inFlight = 0;

  constructor(
    /** The values of some keys; a key it leaves out resolves to undefined. */
    private readonly fetch: (keys: K[]) => Promise<Map<K, V>>,
    private readonly max = 100,
    private readonly maxInFlight = 2,
  ) {}

  load(key: K): Promise<V | undefined> {
    return new Promise<V | undefined>((resolve, reject) => {
      const waiters = this.#pending.get(key);
      if (waiters) waiters.push({ resolve, reject });
      else this.#pending.set(key, [{ resolve, reject }]);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.maxInFlight || this.#pending.size === 0) return;
    this.#scheduled = true;
    setImmediate(this.#flush);
  }

  readonly #settled = () => {
    this.#inFlight -= 1;
    this.#schedule();
  };

  readonly #flush = () => {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = new Map();
    const keys = [...batch.keys()];
    for (let i = 0; i < keys.length; i += this.max) {
      const chunk = keys.slice(i, i + this.max);
      let fetched: Promise<Map<K, V>>;
      try {
        fetched = this.fetch(chunk);
      } catch (err) {
        fetched = Promise.reject(err);
      }
      this.#inFlight += 1;
      fetched
        .then(
          (found) => {
            for (const k of chunk) for (const w of batch.get(k)!) w.resolve(found.get(k));
          },
          (err: unknown) => {
            for (const k of chunk) for (const w of batch.get(k)!) w.reject(err);
          },
        )
        .finally(this.#settled);
    }
  };
}
