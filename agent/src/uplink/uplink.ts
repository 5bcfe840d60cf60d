import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { CLOSE_POLICY, type ErrorObject, PING_INTERVAL_MS, parseFrame } from '@palmid/shared/ws/frames.ts';
import WebSocket from 'ws';
import { Backoff, type BackoffOptions } from './backoff.ts';

export class UplinkError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'UplinkError';
  }
}

export interface UplinkOptions {
  /** http(s)://host:port of the server; the socket goes to /ws/pvs. */
  serverUrl: string;
  deviceToken: string;
  /** Sent first on every (re)connection. */
  hello: () => Record<string, unknown>;
  backoff?: BackoffOptions;
  /** Bound of the offline queue (heartbeats and other events; never payments). */
  queueLimit?: number;
  log?: (line: string) => void;
}

interface Pending {
  id: string;
  method: string;
  params: unknown;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  deadline: number;
  timer: NodeJS.Timeout;
  sent: boolean;
}

/** Why the server turned the kiosk's credentials down for good: retrying cannot help (docs/kiosk-install.md). */
export interface Rejection {
  /** WebSocket close code, or the hello error's code. */
  code: number | string;
  reason: string;
  message: string;
}

/**
 * Close reasons of a 1008 close that a retry cannot cure (the token is wrong or revoked). Others (the
 * per-address failure budget, `too_many_failures`) pass with time, so the link retries them.
 */
const PERMANENT_CLOSE_REASONS: Record<string, string> = {
  unauthorized: 'the server refused the device token (wrong, revoked, or from another server)',
};

/**
 * The kiosk's link to the server. Requests carry ids that are idempotency keys: a request in flight when
 * the link drops is sent again, with the same id, after the reconnect, so the server answers it once.
 * New requests wait for the link only until their own deadline. Events (heartbeats) queue while offline
 * in a bounded queue; the oldest are dropped first.
 */
export class Uplink extends EventEmitter {
  readonly #opts: UplinkOptions;
  readonly #backoff: Backoff;
  readonly #pending = new Map<string, Pending>();
  readonly #queue: { method: string; params: unknown }[] = [];
  #ws: WebSocket | undefined;
  #ready = false;
  #stopped = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #pingTimer: NodeJS.Timeout | undefined;
  #connects = 0;
  #rejection: Rejection | undefined;

  constructor(opts: UplinkOptions) {
    super();
    this.#opts = opts;
    this.#backoff = new Backoff(opts.backoff);
  }

  get connected(): boolean {
    return this.#ready;
  }

  get connections(): number {
    return this.#connects;
  }

  /** Set when the server refused the credentials for good; the link then stops retrying ('rejected'). */
  get rejection(): Rejection | undefined {
    return this.#rejection;
  }

  start(): void {
    this.#stopped = false;
    this.#rejection = undefined;
    this.#open();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#pingTimer);
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(new UplinkError('STOPPED', 'uplink stopped'));
    }
    this.#pending.clear();
    const ws = this.#ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        ws.close(1000, 'agent stopping');
        setTimeout(resolve, 1000).unref();
      });
    }
  }

  /** A request; resolves with the result or rejects with an UplinkError (server error or timeout). */
  call<T = unknown>(
    method: string,
    params: unknown,
    opts: { id?: string; timeoutMs?: number } = {},
  ): Promise<T> {
    const id = opts.id ?? randomUUID();
    const timeoutMs = opts.timeoutMs ?? 15_000;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(
          new UplinkError(
            'TIMEOUT',
            `${method} got no answer within ${timeoutMs} ms${this.#ready ? '' : ' (server unreachable)'}`,
          ),
        );
      }, timeoutMs);
      const p: Pending = {
        id,
        method,
        params,
        resolve: resolve as (v: unknown) => void,
        reject,
        deadline: Date.now() + timeoutMs,
        timer,
        sent: false,
      };
      this.#pending.set(id, p);
      if (this.#ready) this.#send(p);
    });
  }

  /** Fire-and-forget event; queued (bounded) while offline. */
  event(method: string, params: unknown): void {
    if (this.#ready) {
      this.call(method, params, { timeoutMs: 10_000 }).catch(() => undefined);
      return;
    }
    this.#queue.push({ method, params });
    const limit = this.#opts.queueLimit ?? 100;
    while (this.#queue.length > limit) this.#queue.shift();
  }

  get queued(): number {
    return this.#queue.length;
  }

  #log(line: string): void {
    this.#opts.log?.(line);
  }

  #send(p: Pending): void {
    p.sent = true;
    this.#ws?.send(JSON.stringify({ id: p.id, method: p.method, params: p.params }));
  }

  #open(): void {
    if (this.#stopped) return;
    const url = new URL('/ws/pvs', this.#opts.serverUrl.replace(/^http/, 'ws'));
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${this.#opts.deviceToken}` },
      handshakeTimeout: 10_000,
    });
    this.#ws = ws;
    let alive = true;

    ws.on('open', () => {
      alive = true;
      clearInterval(this.#pingTimer);
      this.#pingTimer = setInterval(() => {
        if (!alive) {
          ws.terminate();
          return;
        }
        alive = false;
        ws.ping();
      }, PING_INTERVAL_MS);
      this.#pingTimer.unref();
      // hello first; everything else waits for its answer
      const helloId = `hello-${randomUUID()}`;
      ws.send(JSON.stringify({ id: helloId, method: 'hello', params: this.#opts.hello() }));
      const onHello = (data: WebSocket.RawData) => {
        const f = parseFrame(data.toString());
        if (f.kind !== 'response' || f.id !== helloId) return;
        ws.off('message', onHello);
        if (f.error) {
          this.#log(`server refused hello: ${f.error.message}`);
          this.emit('refused', f.error);
          // A hello the server refuses as forbidden (pvs_id of another kiosk) fails the same way next time.
          if (f.error.code === 'FORBIDDEN' || f.error.code === 'UNAUTHORIZED')
            this.#rejection = {
              code: f.error.code,
              reason: f.error.code.toLowerCase(),
              message: f.error.message,
            };
          ws.close(1000);
          return;
        }
        this.#ready = true;
        this.#connects += 1;
        this.#backoff.reset();
        this.emit('connected', f.result);
        for (const p of this.#pending.values()) this.#send(p);
        for (const q of this.#queue.splice(0))
          this.call(q.method, q.params, { timeoutMs: 10_000 }).catch(() => undefined);
      };
      ws.on('message', onHello);
    });
    ws.on('pong', () => {
      alive = true;
    });
    ws.on('message', (data) => {
      alive = true;
      const f = parseFrame(data.toString());
      if (f.kind === 'response' && f.id !== null) {
        const p = this.#pending.get(f.id);
        if (!p) return;
        this.#pending.delete(f.id);
        clearTimeout(p.timer);
        if (f.error)
          p.reject(new UplinkError(f.error.code, f.error.message, f.error.details as ErrorObject['details']));
        else p.resolve(f.result);
      } else if (f.kind === 'notification') {
        this.emit('notification', f.frame.method, f.frame.params ?? {});
      }
    });
    ws.on('error', (err) => this.#log(`link error: ${err.message}`));
    ws.on('close', (code, reasonBytes) => {
      const reason = reasonBytes.toString();
      const wasReady = this.#ready;
      this.#ready = false;
      clearInterval(this.#pingTimer);
      if (wasReady) this.emit('disconnected', code);
      if (this.#stopped) return;
      const permanent = code === CLOSE_POLICY ? PERMANENT_CLOSE_REASONS[reason] : undefined;
      if (permanent) this.#rejection = { code, reason, message: permanent };
      if (this.#rejection) {
        const r = this.#rejection;
        this.#log(`link closed (${code}${reason ? ` ${reason}` : ''}): ${r.message}; not retrying`);
        this.#stopped = true;
        for (const p of this.#pending.values()) {
          clearTimeout(p.timer);
          p.reject(new UplinkError('REJECTED', r.message));
        }
        this.#pending.clear();
        this.emit('rejected', r);
        return;
      }
      const delay = this.#backoff.next(code === CLOSE_POLICY ? 5_000 : 0);
      this.#log(`link closed (${code}${reason ? ` ${reason}` : ''}); reconnecting in ${delay} ms`);
      this.#retryTimer = setTimeout(() => this.#open(), delay);
      this.#retryTimer.unref();
    });
  }
}
