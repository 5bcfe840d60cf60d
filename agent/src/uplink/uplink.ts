import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { CLOSE_POLICY, parseFrame } from '@palmid/contracts/ws/frames';
import type { pvsMethods } from '@palmid/contracts/ws/pvs';
import {
  type CallOptions,
  keepAlive,
  type MethodMap,
  type ParamsOf,
  type ResultOf,
  RpcClient,
  RpcError,
  rpcErrorOf,
} from '@palmid/contracts/ws/rpc';
import WebSocket from 'ws';
import { Backoff, type BackoffOptions } from './backoff.ts';

/** A failed call: the server's error, or TIMEOUT / STOPPED (the shared RPC client's error). */
export { RpcError as UplinkError };

export type PvsMethods = typeof pvsMethods;

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
  revoked: 'the server revoked this kiosk (admin pvs revoke)',
};

/** What a 1008 close's reason means, in words (the server's reasons, docs/websocket.md). */
const POLICY_REASONS: Record<string, string> = {
  unauthorized: 'the server refused the device token',
  revoked: 'the server revoked this kiosk',
  too_many_failures: 'too many refused logins from this address; the server waits before it listens again',
  too_many_sockets: 'this kiosk already has two links open (is another agent running with the same token?)',
  auth_timeout: 'the login did not arrive in time',
};

/**
 * A WebSocket close in words, for the technician's log: "1006 connection lost (network, or the server
 * stopped without closing)" rather than a bare number.
 */
export function closeInWords(code: number, reason: string): string {
  const words: Record<number, string> = {
    1000: 'closed normally',
    1001: 'the server is going away (restart or shutdown)',
    1005: 'closed without a reason',
    1006: 'connection lost (network, or the server stopped without closing)',
    1008: reason ? (POLICY_REASONS[reason] ?? 'refused by the server') : 'refused by the server',
    1009: 'a message was too large',
    1011: 'the server hit an internal error',
    1012: 'the server is restarting',
    1013: 'the server is overloaded; try again later',
    1015: 'TLS handshake failed (check the certificate of serverUrl)',
  };
  const what = words[code] ?? 'closed';
  return `${code}${reason ? ` ${reason}` : ''}: ${what}`;
}

/**
 * The kiosk's link to the server. Requests carry ids that are idempotency keys: a request in flight when
 * the link drops is sent again, with the same id, after the reconnect, so the server answers it once.
 * New requests wait for the link only until their own deadline. Events (heartbeats) queue while offline
 * in a bounded queue; the oldest are dropped first.
 */
export class Uplink<M extends MethodMap = PvsMethods> extends EventEmitter {
  readonly #opts: UplinkOptions;
  readonly #backoff: Backoff;
  readonly #rpc = new RpcClient<M>(randomUUID);
  readonly #queue: { method: keyof M & string; params: unknown }[] = [];
  #ws: WebSocket | undefined;
  #ready = false;
  #stopped = false;
  #retryTimer: NodeJS.Timeout | undefined;
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
    this.#rpc.rejectAll(new RpcError('STOPPED', 'uplink stopped'));
    const ws = this.#ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        ws.close(1000, 'agent stopping');
        setTimeout(resolve, 1000).unref();
      });
    }
  }

  /** A request of /ws/pvs; resolves with the result or rejects with an UplinkError (server error or timeout). */
  call<K extends keyof M & string>(
    method: K,
    params: ParamsOf<M, K>,
    opts: CallOptions = {},
  ): Promise<ResultOf<M, K>> {
    return this.#rpc.call(method, params, opts);
  }

  /** Fire-and-forget event; queued (bounded) while offline. */
  event<K extends keyof M & string>(method: K, params: ParamsOf<M, K>): void {
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

  #open(): void {
    if (this.#stopped) return;
    const url = new URL('/ws/pvs', this.#opts.serverUrl.replace(/^http/, 'ws'));
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${this.#opts.deviceToken}` },
      handshakeTimeout: 10_000,
    });
    this.#ws = ws;

    ws.on('open', () => {
      keepAlive(ws);
      // hello first; everything else waits for its answer
      const helloId = `hello-${randomUUID()}`;
      ws.send(JSON.stringify({ id: helloId, method: 'hello', params: this.#opts.hello() }));
      const onHello = (data: WebSocket.RawData) => {
        const f = parseFrame(data.toString());
        if (f.kind !== 'response' || f.id !== helloId) return;
        ws.off('message', onHello);
        if (f.error) {
          this.#log(`server refused hello: ${f.error.message}`);
          this.emit('refused', rpcErrorOf(f.error));
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
        this.#rpc.attach((text) => ws.send(text));
        for (const q of this.#queue.splice(0))
          this.#rpc.call(q.method, q.params as never, { timeoutMs: 10_000 }).catch(() => undefined);
      };
      ws.on('message', onHello);
    });
    ws.on('message', (data) => {
      const f = parseFrame(data.toString());
      if (this.#rpc.handle(f)) return;
      if (f.kind === 'notification') {
        this.emit('notification', f.frame.method, f.frame.params ?? {});
      }
    });
    ws.on('error', (err) => this.#log(`link error: ${err.message}`));
    ws.on('close', (code, reasonBytes) => {
      const reason = reasonBytes.toString();
      const wasReady = this.#ready;
      this.#ready = false;
      this.#rpc.detach();
      if (wasReady) this.emit('disconnected', code);
      if (this.#stopped) return;
      const permanent = code === CLOSE_POLICY ? PERMANENT_CLOSE_REASONS[reason] : undefined;
      if (permanent) this.#rejection = { code, reason, message: permanent };
      if (this.#rejection) {
        const r = this.#rejection;
        this.#log(`link closed (${code}${reason ? ` ${reason}` : ''}): ${r.message}; not retrying`);
        this.#stopped = true;
        this.#rpc.rejectAll(new RpcError('REJECTED', r.message));
        this.emit('rejected', r);
        return;
      }
      const delay = this.#backoff.next(code === CLOSE_POLICY ? 5_000 : 0);
      this.#log(`link closed (${closeInWords(code, reason)}); reconnecting in ${delay} ms`);
      this.#retryTimer = setTimeout(() => this.#open(), delay);
      this.#retryTimer.unref();
    });
  }
}
