import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { SIGNATURE_HEADER, signatureHeader } from '@palmid/contracts/webhooks';
import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { AddressRefused, resolveTarget } from './addresses.ts';
import { endpointSecret } from './service.ts';
import { type DeliveryRow, webhookStore } from './store.ts';

/**
 * The webhook sender (docs/vendor-api.md, "Webhooks"): every instance runs one; they share the outbox in
 * the database. A sender takes a due delivery with a lease (compare-and-set, so one instance sends it),
 * POSTs it signed, and records the attempt. A failure is retried with exponential backoff and jitter
 * until the event is older than the retry window (24 h by default); an instance that dies while sending
 * leaves a lease that runs out, and another instance (or the restarted one) sends it again: at least once.
 * The events of one context go to an endpoint in order: a delivery waits while an earlier one of the same
 * context and endpoint is pending.
 */
export interface SenderOptions {
  /** First retry delay; each further one doubles, up to `maxDelayMs`. Default 10 s. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** How long an event is retried. Default 24 h. */
  retryWindowMs?: number;
  /** How often the outbox is polled (an event of this instance wakes the sender at once). Default 1 s. */
  pollMs?: number;
  /** The HTTP request's deadline. Default 10 s. */
  timeoutMs?: number;
  /** How long a claimed delivery is this sender's (then another may send it again). Default 30 s. */
  leaseMs?: number;
  /** What an event's `data` says when sent (e.g. the context's result, read now). */
  data: (d: DeliveryRow, stored: unknown) => Promise<unknown> | unknown;
  log?: { warn(obj: object, msg: string): void };
  random?: () => number;
}

export const DEFAULT_RETRY_WINDOW_MS = 24 * 3600_000;

/** The delay before attempt `n + 1` after `n` failed attempts: exponential, capped, with jitter (50-100 %). */
export function backoff(n: number, base: number, max: number, random: () => number = Math.random): number {
  const exp = Math.min(max, base * 2 ** Math.max(0, n - 1));
  return Math.round(exp * (0.5 + random() / 2));
}

export class WebhookSender {
  readonly #ctx: AppContext;
  readonly #db: Db;
  readonly #o: Required<Omit<SenderOptions, 'log'>> & Pick<SenderOptions, 'log'>;
  readonly #owner: string;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  #again = false;
  #stopped = false;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(ctx: AppContext, options: SenderOptions) {
    this.#ctx = ctx;
    this.#db = ctx.database.db;
    this.#owner = ctx.events.instanceId;
    this.#o = {
      baseDelayMs: 10_000,
      maxDelayMs: 3600_000,
      retryWindowMs: DEFAULT_RETRY_WINDOW_MS,
      pollMs: 1000,
      timeoutMs: 10_000,
      leaseMs: 30_000,
      random: Math.random,
      ...options,
    };
  }

  start(): void {
    this.#timer = setInterval(() => this.nudge(), this.#o.pollMs);
    this.#timer.unref();
    this.nudge();
  }

  /** Looks at the outbox now (called after this instance queued an event). */
  nudge(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    void this.#pass()
      .catch((err) => this.#o.log?.warn({ err }, 'webhook sender pass failed'))
      .finally(() => {
        this.#running = false;
        if (this.#again) {
          this.#again = false;
          this.nudge();
        }
      });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await Promise.allSettled([...this.#inFlight]);
  }

  async #pass(): Promise<void> {
    const now = this.#ctx.now();
    for (const d of await webhookStore(this.#db).dueDeliveries(now, 32)) {
      if (this.#stopped) return;
      if (!(await webhookStore(this.#db).claimDelivery(d.seq, this.#owner, now, now + this.#o.leaseMs)))
        continue;
      const job = this.#send(d).catch((err) => this.#o.log?.warn({ err }, 'webhook delivery failed'));
      this.#inFlight.add(job);
      void job.finally(() => {
        this.#inFlight.delete(job);
        // the context's next event may be due now
        this.nudge();
      });
    }
  }

  async #send(d: DeliveryRow): Promise<void> {
    const endpoint = await webhookStore(this.#db).endpointById(d.endpoint_id);
    let status: number | null = null;
    let error: string | null = null;
    if (!endpoint || endpoint.deleted_at !== null) {
      await webhookStore(this.#db).recordAttempt(d.seq, this.#owner, {
        state: 'failed',
        attempts: Number(d.attempts),
        nextAttemptAt: Number(d.next_attempt_at),
        at: this.#ctx.now(),
        status: null,
        error: 'endpoint deleted',
      });
      return;
    }
    const stored = JSON.parse(d.payload) as { created: number; data: unknown };
    const body = JSON.stringify({
      id: d.event_id,
      type: d.type,
      created: Math.floor(stored.created / 1000),
      data: await this.#o.data(d, stored.data),
    });
    try {
      status = await this.#post(new URL(endpoint.url), body, endpointSecret(this.#ctx, endpoint), d);
      if (status < 200 || status > 299) error = `HTTP ${status}`;
    } catch (err) {
      error = err instanceof AddressRefused ? `refused: ${err.message}` : describe(err);
    }
    const at = this.#ctx.now();
    const attempts = Number(d.attempts) + 1;
    if (error === null) {
      await webhookStore(this.#db).recordAttempt(d.seq, this.#owner, {
        state: 'delivered',
        attempts,
        nextAttemptAt: at,
        at,
        status,
        error: null,
      });
      return;
    }
    const next = at + backoff(attempts, this.#o.baseDelayMs, this.#o.maxDelayMs, this.#o.random);
    const giveUp = next - Number(d.created_at) > this.#o.retryWindowMs;
    await webhookStore(this.#db).recordAttempt(d.seq, this.#owner, {
      state: giveUp ? 'failed' : 'pending',
      attempts,
      nextAttemptAt: giveUp ? at : next,
      at,
      status,
      error,
    });
  }

  async #post(url: URL, body: string, secret: string, d: DeliveryRow): Promise<number> {
    const development = this.#ctx.config.PALMID_ENV === 'development';
    const target = await resolveTarget(url, development);
    // connect to the address that was checked (no second resolution that could be rebound)
    const lookup: LookupFunction = (_host, opts, cb) => {
      if ((opts as { all?: boolean }).all)
        (cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [target]);
      else cb(null, target.address, target.family);
    };
    const t = Math.floor(Date.now() / 1000);
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<number>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          lookup,
          timeout: this.#o.timeoutMs,
          headers: {
            'Content-Type': 'application/json',
            'Content-Length': Buffer.byteLength(body),
            'User-Agent': `palmid-webhooks/${this.#ctx.version}`,
            'Palmid-Event-Id': d.event_id,
            'Palmid-Delivery-Id': d.id,
            [SIGNATURE_HEADER]: signatureHeader(secret, body, t),
          },
        },
        (res) => {
          res.resume(); // the body is not read beyond draining it
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.#o.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return (e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err)).slice(0, 200);
}

/**
 * Starts this instance's sender with the configured schedule; it looks at the outbox on every poll and at
 * once when a context of any vendor changes or a delivery is replayed (on this instance, or on another one
 * when the event hub is shared).
 */
export function startWebhookSender(
  ctx: AppContext,
  options: Omit<SenderOptions, 'baseDelayMs' | 'pollMs'> & Partial<SenderOptions>,
): { sender: WebhookSender; stop(): Promise<void> } {
  const sender = new WebhookSender(ctx, {
    baseDelayMs: ctx.config.PALMID_WEBHOOK_RETRY_BASE_MS,
    pollMs: ctx.config.PALMID_WEBHOOK_POLL_MS,
    ...options,
  });
  const offs = [
    ctx.events.subscribe('auth.updated', () => sender.nudge()),
    ctx.events.subscribe('webhook.queued', () => sender.nudge()),
  ];
  sender.start();
  return {
    sender,
    async stop() {
      for (const off of offs) off();
      await sender.stop();
    },
  };
}
