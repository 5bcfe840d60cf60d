import { CLOSE_POLICY, parseFrame } from '@palmid/contracts/ws/frames';
import { type ParamsOf, type ResultOf, RpcClient, RpcError } from '@palmid/contracts/ws/rpc';
import {
  type AuthUpdated,
  authUpdatedSchema,
  type VendorMethod,
  type vendorAuthMethod,
  type vendorMethods,
} from '@palmid/contracts/ws/vendor';

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'closed' | 'refused';

/**
 * The console's end of /ws/vendor. Browsers cannot send X-API-Key on a WebSocket, so the key goes in the
 * first frame (`auth`); the server closes with 1008 if it is wrong or late. Reconnects with exponential
 * backoff and jitter, and re-subscribes to unfinished contexts so nothing missed while away stays stale.
 * Calls go through the shared RpcClient (typed by `vendorMethods`, docs/websocket.md); it is attached only
 * once `auth` has succeeded, so `auth` is always the first frame on each connection.
 */
export class LiveSocket {
  #ws: WebSocket | null = null;
  #seq = 0;
  readonly #rpc = new RpcClient<typeof vendorMethods>(() => this.#nextId());
  /** The id of the `auth` call in flight on the current connection. */
  #authId: string | null = null;
  #attempt = 0;
  #stopped = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly key: () => string | null,
    private readonly onUpdate: (u: AuthUpdated) => void,
    private readonly onState: (s: LiveState) => void,
    private readonly resubscribe: () => string[],
  ) {}

  start(): void {
    this.#stopped = false;
    this.#open();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#ws?.close(1000, 'signed out');
    this.#ws = null;
    this.#authId = null;
    this.#rpc.detach();
    this.#rpc.rejectAll(new RpcError('STOPPED', 'closed'));
    this.onState('closed');
  }

  /**
   * A call on the open connection; rejects at once when there is none. One made while `auth` is still
   * in flight waits in the RpcClient and goes out right after `auth` succeeds.
   */
  request<K extends VendorMethod>(
    method: K,
    params: ParamsOf<typeof vendorMethods, K>,
  ): Promise<ResultOf<typeof vendorMethods, K>> {
    const ws = this.#ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error('not connected'));
    return this.#rpc.call(method, params);
  }

  #nextId(): string {
    return `c${++this.#seq}`;
  }

  #open(): void {
    const key = this.key();
    if (!key) return;
    this.onState(this.#attempt === 0 ? 'connecting' : 'reconnecting');
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${scheme}//${location.host}/ws/vendor`);
    this.#ws = ws;
    ws.addEventListener('open', () => {
      // Sent outside the RpcClient: it must be the first frame, before anything the client would resend.
      const id = this.#nextId();
      this.#authId = id;
      const params: ParamsOf<{ auth: typeof vendorAuthMethod }, 'auth'> = { api_key: key };
      ws.send(JSON.stringify({ id, method: 'auth', params }));
    });
    ws.addEventListener('message', (ev) => {
      if (this.#ws !== ws) return;
      const frame = parseFrame(String(ev.data));
      if (frame.kind === 'notification') {
        if (frame.frame.method === 'auth.updated') this.#deliver(frame.frame.params);
        return;
      }
      if (frame.kind === 'response' && frame.id !== null && frame.id === this.#authId) {
        this.#authId = null;
        // A refused key: the server closes with 1008 (handled on close).
        if (frame.error) return;
        this.#rpc.attach((text) => ws.send(text));
        this.#attempt = 0;
        this.onState('live');
        for (const authId of this.resubscribe()) {
          this.request('subscribe', { auth_id: authId }).then(
            (r) => this.#deliver(r),
            () => undefined,
          );
        }
        return;
      }
      this.#rpc.handle(frame);
    });
    ws.addEventListener('close', (ev) => {
      if (this.#ws !== ws) return;
      this.#ws = null;
      this.#authId = null;
      this.#rpc.detach();
      // Nothing is resent on the next connection: `resubscribe` decides what to ask for again.
      this.#rpc.rejectAll(new RpcError('CLOSED', 'connection closed'));
      if (this.#stopped) return;
      if (ev.code === CLOSE_POLICY) {
        this.onState('refused');
        return;
      }
      this.#attempt++;
      const delay = Math.min(30_000, 500 * 2 ** Math.min(this.#attempt, 6)) * (0.5 + Math.random() / 2);
      this.onState('reconnecting');
      this.#timer = setTimeout(() => this.#open(), delay);
    });
  }

  /** An `auth.updated` notification or a `subscribe` result (one shape, shared/contracts/src/ws/vendor.ts). */
  #deliver(params: unknown): void {
    const parsed = authUpdatedSchema.safeParse(params);
    if (parsed.success) this.onUpdate(parsed.data);
  }
}
