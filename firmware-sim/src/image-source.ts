import { Worker } from 'node:worker_threads';
import type { Presentation } from './presentation.ts';
import type { Sensor } from './synth/sensors.ts';

export interface GrayFrame {
  width: number;
  height: number;
  /** 8-bit grayscale, row-major, width × height bytes. */
  data: Uint8Array;
}

export interface RenderRequest extends Presentation {
  /** Capture counter: each capture of the same hand differs a little (pose, light). */
  capture: number;
  width: number;
  height: number;
}

/** Where the simulated sensor's NIR frames come from. */
export interface ImageSource {
  readonly name: string;
  render(request: RenderRequest): Promise<GrayFrame>;
  /** Load code and caches ahead of time so the first capture is not slow. */
  warmUp?(palms: RenderRequest[]): Promise<void>;
}

function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * Deterministic test pattern: a gradient with diagonal stripes whose phase and pitch depend on
 * (identity, hand, attack, capture). Instant to render; used in fast tests and as the fallback.
 */
export const testPatternSource: ImageSource = {
  name: 'test-pattern',
  async render(r) {
    const seed = hash32(`${r.identity}|${r.hand}|${r.attack ?? 'live'}|${r.capture}`);
    const pitch = 6 + (seed % 11);
    const phase = (seed >>> 8) % pitch;
    const data = new Uint8Array(r.width * r.height);
    for (let y = 0; y < r.height; y++) {
      for (let x = 0; x < r.width; x++) {
        const stripe = (x + y + phase) % pitch < pitch / 2 ? 40 : 0;
        data[y * r.width + x] = (60 + ((x * 120) / r.width + (y * 40) / r.height) + stripe) & 0xff;
      }
    }
    return { width: r.width, height: r.height, data };
  },
};

/** The renderer's spec for a request: the sensor profile is the source's, not the palm's. */
function specOf(r: RenderRequest, sensor: Sensor) {
  return {
    identity: r.identity,
    hand: r.hand,
    capture: r.capture,
    width: r.width,
    height: r.height,
    ...(r.attack ? { attack: r.attack } : {}),
    ...(r.condition ? { condition: r.condition } : {}),
    ...(sensor !== 'simulator' ? { sensor } : {}),
  };
}

/**
 * Synthetic palms from the palm pipeline's renderer (`./synth`), imported lazily, in this
 * thread, as `sensor` (synth/sensors.ts) sees them. Blocks the event loop while it renders;
 * `createSynthPalmSource` avoids that.
 */
export function synthPalmSourceInThreadFor(sensor: Sensor = 'simulator'): ImageSource {
  return {
    name: sensor === 'simulator' ? 'synthetic-palm (in-thread)' : `synthetic-palm ${sensor} (in-thread)`,
    async render(r) {
      const { renderPalm } = await import('./synth/index.ts');
      const f = await renderPalm(specOf(r, sensor));
      return { width: f.width, height: f.height, data: f.data };
    },
    async warmUp(palms) {
      for (const p of palms) await this.render(p);
    },
  };
}

export const synthPalmSourceInThread: ImageSource = synthPalmSourceInThreadFor('simulator');

type Job = { resolve(f: GrayFrame): void; reject(e: Error): void };

/**
 * The synthetic palm renderer in a worker thread, so the simulated firmware keeps answering while
 * a frame is rendered. Falls back to rendering in this thread if the worker cannot start.
 */
class WorkerSynthSource implements ImageSource {
  readonly name: string;
  private readonly inThread: ImageSource;
  private worker: Worker | undefined;
  private ready: Promise<boolean> | undefined;
  private readonly jobs = new Map<number, Job>();
  private nextId = 1;

  constructor(private readonly sensor: Sensor) {
    this.name = sensor === 'simulator' ? 'synthetic-palm' : `synthetic-palm ${sensor}`;
    this.inThread = synthPalmSourceInThreadFor(sensor);
  }

  private start(): Promise<boolean> {
    if (this.ready) return this.ready;
    this.ready = new Promise<boolean>((resolve) => {
      let worker: Worker;
      try {
        worker = new Worker(new URL('./render-worker.mjs', import.meta.url));
      } catch {
        resolve(false);
        return;
      }
      worker.unref();
      worker.on('message', (msg: { ready?: boolean; id?: number; error?: string } & Partial<GrayFrame>) => {
        if (msg.ready) {
          this.worker = worker;
          resolve(true);
          return;
        }
        const job = msg.id === undefined ? undefined : this.jobs.get(msg.id);
        if (!job || msg.id === undefined) return;
        this.jobs.delete(msg.id);
        if (this.jobs.size === 0) worker.unref();
        if (msg.error !== undefined) job.reject(new Error(msg.error));
        else job.resolve({ width: msg.width!, height: msg.height!, data: msg.data! });
      });
      const fail = (err: Error) => {
        this.worker = undefined;
        this.ready = undefined;
        for (const job of this.jobs.values()) job.reject(err);
        this.jobs.clear();
        resolve(false);
      };
      worker.on('error', fail);
      worker.on('exit', (code) => fail(new Error(`render worker exited (${code})`)));
    });
    return this.ready;
  }

  async render(r: RenderRequest): Promise<GrayFrame> {
    const worker = (await this.start()) ? this.worker : undefined;
    if (!worker) return this.inThread.render(r);
    const id = this.nextId++;
    const spec = specOf(r, this.sensor);
    return new Promise<GrayFrame>((resolve, reject) => {
      this.jobs.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, spec });
    });
  }

  async warmUp(palms: RenderRequest[]): Promise<void> {
    for (const p of palms) await this.render(p);
  }
}

/** Synthetic palms as `sensor` sees them, rendered in a worker thread. */
export function createSynthPalmSource(sensor: Sensor = 'simulator'): ImageSource {
  return new WorkerSynthSource(sensor);
}

/** The simulated kiosk sensor's frames (sensor profile `sim`). */
export const synthPalmSource: ImageSource = createSynthPalmSource('simulator');
