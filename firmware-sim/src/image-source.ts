import type { Presentation } from './presentation.ts';

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

/**
 * Realistic synthetic palms from the palm pipeline's renderer (`./synth`), imported lazily so the
 * simulator starts fast and still works if the renderer is unavailable.
 */
export const synthPalmSource: ImageSource = {
  name: 'synthetic-palm',
  async render(r) {
    const { renderPalm } = await import('./synth/index.ts');
    return renderPalm({
      identity: r.identity,
      hand: r.hand,
      capture: r.capture,
      width: r.width,
      height: r.height,
      ...(r.attack ? { attack: r.attack } : {}),
      ...(r.condition ? { condition: r.condition } : {}),
    });
  },
  async warmUp(palms) {
    for (const p of palms) await this.render(p);
  },
};
