import type { z } from 'zod';
import { type ErrorObject, type IncomingFrame, PING_INTERVAL_MS } from './frames.ts';

/**
 * The RPC layer of both WebSocket channels (docs/websocket.md): typed method maps (`pvsMethods` in
 * ./pvs.ts, `vendorMethods` in ./vendor.ts), the one client that calls them (`RpcClient`) and the one
 * keepalive (`keepAlive`). The server's dispatcher is server/src/lib/ws-rpc.ts.
 */

export interface MethodSpec {
  params: z.ZodType;
  result: z.ZodType;
}
export type MethodMap = Record<string, MethodSpec>;
/** What a caller passes (before the schema's defaults and transforms). */
export type ParamsOf<M extends MethodMap, K extends keyof M> = z.input<M[K]['params']>;
/** What a call resolves to. */
export type ResultOf<M extends MethodMap, K extends keyof M> = z.output<M[K]['result']>;

/** A call that failed: the server's error object, or TIMEOUT / STOPPED from the client itself. */
export class RpcError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

export interface CallOptions {
  /** The request id; ids are idempotency keys on /ws/pvs. Default: a random UUID. */
  id?: string;
  /** Default 15 s. */
  timeoutMs?: number;
}

interface Pending {
  id: string;
  text: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * Calls over a link that may come and go: `attach` gives it a way to send (after the link's handshake),
 * `detach` takes it away. A call made while detached waits for the link until its own deadline; calls in
 * flight when the link drops are sent again, with the same id, when it is attached again (the server
 * answers a repeated id once). Feed every incoming frame to `handle`.
 */
export class RpcClient<M extends MethodMap> {
  readonly #pending = new Map<string, Pending>();
  #send: ((text: string) => void) | undefined;

  constructor(private readonly newId: () => string = () => globalThis.crypto.randomUUID()) {}

  get attached(): boolean {
    return this.#send !== undefined;
  }

  call<K extends keyof M & string>(
    method: K,
    params: ParamsOf<M, K>,
    opts: CallOptions = {},
  ): Promise<ResultOf<M, K>> {
    const id = opts.id ?? this.newId();
    const timeoutMs = opts.timeoutMs ?? 15_000;
    return new Promise<ResultOf<M, K>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        const offline = this.attached ? '' : ' (server unreachable)';
        reject(new RpcError('TIMEOUT', `${method} got no answer within ${timeoutMs} ms${offline}`));
      }, timeoutMs);
      const p: Pending = {
        id,
        text: JSON.stringify({ id, method, params }),
        resolve: resolve as (v: unknown) => void,
        reject,
        timer,
      };
      this.#pending.set(id, p);
      this.#send?.(p.text);
    });
  }

  /** The link is up: send what waits, and later calls at once. */
  attach(send: (text: string) => void): void {
    this.#send = send;
    for (const p of this.#pending.values()) send(p.text);
  }

  detach(): void {
    this.#send = undefined;
  }

  /** Settles the call a response frame answers; false for any other frame. */
  handle(frame: IncomingFrame): boolean {
    if (frame.kind !== 'response' || frame.id === null) return false;
    const p = this.#pending.get(frame.id);
    if (!p) return false;
    this.#pending.delete(frame.id);
    clearTimeout(p.timer);
    if (frame.error) p.reject(rpcErrorOf(frame.error));
    else p.resolve(frame.result);
    return true;
  }

  /** Rejects every call in flight (the client is shutting down). */
  rejectAll(error: Error): void {
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(error);
    }
    this.#pending.clear();
  }
}

export function rpcErrorOf(e: ErrorObject): RpcError {
  return new RpcError(e.code, e.message, e.details);
}

/** What `keepAlive` needs of a socket (the `ws` package's WebSocket has it). */
export interface PingableSocket {
  ping(): void;
  terminate(): void;
  on(event: 'pong' | 'message' | 'close', listener: () => void): unknown;
}

/**
 * The one keepalive of both channels, on both ends: a ping every `intervalMs`; a peer that sent
 * nothing (no pong, no message) since the last ping is dropped. Stops by itself when the socket closes.
 */
export function keepAlive(socket: PingableSocket, intervalMs = PING_INTERVAL_MS): () => void {
  let alive = true;
  const seen = () => {
    alive = true;
  };
  socket.on('pong', seen);
  socket.on('message', seen);
  const timer = setInterval(() => {
    if (!alive) {
      socket.terminate();
      return;
    }
    alive = false;
    socket.ping();
  }, intervalMs);
  (timer as { unref?: () => void }).unref?.();
  const stop = () => clearInterval(timer);
  socket.on('close', stop);
  return stop;
}
