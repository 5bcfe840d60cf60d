import WebSocket from 'ws';

/** WebSocket helpers of the security suites: a recording socket and a kiosk that has said hello. */
export interface Frame {
  id?: string;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: Record<string, unknown>;
}

/** A socket that records every frame and how it closed. */
export class Recorder {
  readonly frames: Frame[] = [];
  closed: { code: number; reason: string; at: number } | undefined;
  readonly #closeWaiters: (() => void)[] = [];
  readonly #frameWaiters: { pred: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      const f = JSON.parse(d.toString()) as Frame;
      this.frames.push(f);
      for (const w of [...this.#frameWaiters]) {
        if (w.pred(f)) {
          this.#frameWaiters.splice(this.#frameWaiters.indexOf(w), 1);
          w.resolve(f);
        }
      }
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString(), at: performance.now() };
      for (const w of this.#closeWaiters) w();
    });
  }

  static async open(url: string, headers: Record<string, string>): Promise<Recorder> {
    const ws = new WebSocket(url, { headers });
    const r = new Recorder(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return r;
  }

  frame(pred: (f: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
    const found = this.frames.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('timed out waiting for a frame')), timeoutMs);
      this.#frameWaiters.push({
        pred,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
      });
    });
  }

  async call(id: string, method: string, params: unknown): Promise<Frame> {
    this.ws.send(JSON.stringify({ id, method, params }));
    return this.frame((f) => f.id === id);
  }

  whenClosed(timeoutMs = 10_000): Promise<{ code: number; reason: string; at: number }> {
    if (this.closed) return Promise.resolve(this.closed);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('socket still open')), timeoutMs);
      this.#closeWaiters.push(() => {
        clearTimeout(timer);
        resolve(this.closed!);
      });
    });
  }
}

export async function openKiosk(wsBase: string, kiosk: { pvs_id: string; device_token: string }) {
  const r = await Recorder.open(`${wsBase}/ws/pvs`, { authorization: `Bearer ${kiosk.device_token}` });
  const hello = await r.call('h1', 'hello', {
    pvs_id: kiosk.pvs_id,
    agent_version: 'test',
    firmware: 'test',
    model: 'test',
  });
  if (hello.result?.pvs_id !== kiosk.pvs_id) throw new Error(`hello refused: ${JSON.stringify(hello)}`);
  return r;
}
