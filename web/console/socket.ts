import type { AuthUpdated } from '@palmid/shared/ws/vendor.ts';
import { authUpdatedSchema } from '@palmid/shared/ws/vendor.ts';

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'closed' | 'refused';

interface Pending {
  resolve: (result: unknown) => void;
  reject: (err: Error) => void;
}

/**
 * The console's end of /ws/vendor. Browsers cannot send X-API-Key on a WebSocket, so the key goes in the
 * first frame (`auth`); the server closes with 1008 if it is wrong or late. Reconnects with exponential
 * backoff and jitter, and re-subscribes to unfinished contexts so nothing missed while away stays stale.
 */
export class LiveSocket {
  #ws: WebSocket | null = null;
  #seq = 0;
  #pending = new Map<string, Pending>();
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
    for (const p of this.#pending.values()) p.reject(new Error('closed'));
    this.#pending.clear();
    this.onState('closed');
  }

  request(method: string, params: Record<string, unknown>): Promise<unknown> {
    const ws = this.#ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error('not connected'));
    const id = `c${++this.#seq}`;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  }

  #open(): void {
    const key = this.key();
    if (!key) return;
    this.onState(this.#attempt === 0 ? 'connecting' : 'reconnecting');
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${scheme}//${location.host}/ws/vendor`);
    this.#ws = ws;
    ws.addEventListener('open', () => {
      const id = `c${++this.#seq}`;
      this.#pending.set(id, {
        resolve: () => {
          this.#attempt = 0;
          this.onState('live');
          for (const authId of this.resubscribe()) {
            this.request('subscribe', { auth_id: authId }).then(
              (r) => this.#deliver(r),
              () => undefined,
            );
          }
        },
        reject: () => undefined,
      });
      ws.send(JSON.stringify({ id, method: 'auth', params: { api_key: key } }));
    });
    ws.addEventListener('message', (ev) => {
      let frame: {
        id?: string | null;
        method?: string;
        params?: unknown;
        result?: unknown;
        error?: { message?: string };
      };
      try {
        frame = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      if (frame.method === 'auth.updated') {
        this.#deliver(frame.params);
        return;
      }
      if (typeof frame.id === 'string') {
        const p = this.#pending.get(frame.id);
        this.#pending.delete(frame.id);
        if (!p) return;
        if (frame.error) p.reject(new Error(frame.error.message ?? 'request failed'));
        else p.resolve(frame.result);
      }
    });
    ws.addEventListener('close', (ev) => {
      if (this.#ws !== ws) return;
      this.#ws = null;
      for (const p of this.#pending.values()) p.reject(new Error('connection closed'));
      this.#pending.clear();
      if (this.#stopped) return;
      if (ev.code === 1008) {
        this.onState('refused');
        return;
      }
      this.#attempt++;
      const delay = Math.min(30_000, 500 * 2 ** Math.min(this.#attempt, 6)) * (0.5 + Math.random() / 2);
      this.onState('reconnecting');
      this.#timer = setTimeout(() => this.#open(), delay);
    });
  }

  #deliver(params: unknown): void {
    const parsed = authUpdatedSchema.safeParse(params);
    if (parsed.success) this.onUpdate(parsed.data);
  }
}
