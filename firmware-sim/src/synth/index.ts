import sharp from 'sharp';
import { type CanonicalHand, rasterise, sampleLayer } from './canonical.ts';
import { handModel } from './hand-model.ts';
import { renderRealistic } from './realistic.ts';
import { createRng, gaussian, type Rng, uniform } from './rng.ts';
import type { Sensor } from './sensors.ts';

export { SENSOR_DESCRIPTIONS, SENSORS, type Sensor } from './sensors.ts';

export type Hand = 'left' | 'right';
export type Attack = 'print' | 'screen';
/** Forced capture defects, for exercising the quality checks (extension of the agreed spec). */
export type CaptureCondition =
  | 'good'
  | 'too_far'
  | 'blurred'
  | 'moved'
  | 'overexposed'
  | 'underexposed'
  | 'partial';

export interface PalmSpec {
  identity: string;
  hand: Hand;
  /** Seeds the per-capture variation (pose, warp, light, blur, noise). */
  capture: number;
  attack?: Attack;
  width?: number;
  height?: number;
  condition?: CaptureCondition;
  /** What the capture looks like (sensors.ts); `simulator`, the simulated kiosk sensor, by default. */
  sensor?: Sensor;
}

export interface GrayFrame {
  width: number;
  height: number;
  data: Uint8Array;
  /** Interleaved RGB of the same frame, from a colour sensor only (`data` is then its luma). */
  rgb?: Uint8Array;
}

const cache = new Map<string, CanonicalHand>();
const CACHE_LIMIT = 48;

function canonical(identity: string, hand: Hand): CanonicalHand {
  const key = `${identity}\u0000${hand}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const raster = rasterise(handModel(identity, hand));
  cache.set(key, raster);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  return raster;
}

interface Pose {
  scale: number;
  angle: number;
  cx: number;
  cy: number;
  warp: Array<{ fx: number; fy: number; phase: number; ax: number; ay: number }>;
}

function pose(rng: Rng, width: number, height: number, condition: CaptureCondition): Pose {
  const base = 84 * Math.min(width / 320, height / 240);
  let scale = base * uniform(rng, 0.93, 1.07);
  if (condition === 'too_far') scale *= 0.5;
  const angle = Math.max(-0.25, Math.min(0.25, gaussian(rng) * 0.09));
  let cx = width / 2 + gaussian(rng) * 0.025 * width;
  const cy = height * 0.6 + gaussian(rng) * 0.02 * height;
  if (condition === 'partial') cx += (rng() < 0.5 ? -1 : 1) * width * 0.42;
  const warp = [];
  for (let k = 0; k < 3; k++) {
    warp.push({
      fx: uniform(rng, -4, 4),
      fy: uniform(rng, -4, 4),
      phase: uniform(rng, 0, 2 * Math.PI),
      ax: gaussian(rng) * 0.006,
      ay: gaussian(rng) * 0.006,
    });
  }
  return { scale, angle, cx, cy, warp };
}

/**
 * Renders one 8-bit frame of a whole hand, deterministic per (identity, hand, capture, sensor):
 * the simulated NIR kiosk sensor by default, or a realistic capture of another sensor (realistic.ts).
 */
export async function renderPalm(spec: PalmSpec): Promise<GrayFrame> {
  const width = spec.width ?? 320;
  const height = spec.height ?? 240;
  if (
    !Number.isInteger(width) ||
    !Number.isInteger(height) ||
    width < 32 ||
    height < 32 ||
    width * height > 4e6
  ) {
    throw new RangeError('renderPalm: width and height must be integers in [32, 2000]');
  }
  const condition = spec.condition ?? 'good';
  if (spec.sensor !== undefined && spec.sensor !== 'simulator') {
    return renderRealistic(
      {
        identity: spec.identity,
        hand: spec.hand,
        capture: spec.capture,
        width,
        height,
        condition,
        ...(spec.attack ? { attack: spec.attack } : {}),
      },
      spec.sensor,
    );
  }
  const rng = createRng(`capture:${spec.identity}:${spec.hand}:${spec.capture}:${spec.attack ?? 'live'}`);
  const hand = canonical(spec.identity, spec.hand);
  const p = pose(rng, width, height, condition);
  const mirror = spec.hand === 'left' ? -1 : 1;
  const cos = Math.cos(p.angle);
  const sin = Math.sin(p.angle);
  let gain = uniform(rng, 0.85, 1.08);
  if (condition === 'overexposed') gain *= 2.6;
  if (condition === 'underexposed') gain *= 0.22;
  const gradX = gaussian(rng) * 0.15;
  const gradY = gaussian(rng) * 0.15;
  const gamma = uniform(rng, 0.9, 1.12);
  const background = uniform(rng, 0.03, 0.07);
  const attack = spec.attack;
  const halftone = {
    period: uniform(rng, 2.6, 3.6),
    angle: uniform(rng, 0.3, 1.2),
    phase: uniform(rng, 0, 6.28),
  };
  const grid = { period: uniform(rng, 2.2, 3.2), angle: uniform(rng, -0.08, 0.08) };
  const out = new Uint8Array(width * height);
  for (let row = 0; row < height; row++) {
    for (let col = 0; col < width; col++) {
      const u = (col - p.cx) / p.scale;
      const v = (row - p.cy) / p.scale;
      let hx = (cos * u + sin * v) * mirror;
      let hy = -sin * u + cos * v;
      for (const w of p.warp) {
        const s = Math.sin(w.fx * hx + w.fy * hy + w.phase);
        hx += w.ax * s;
        hy += w.ay * s;
      }
      const mask = sampleLayer(hand, hand.mask, hx, hy);
      const nx = col / width - 0.5;
      const ny = row / height - 0.5;
      const light = gain * (1 + gradX * nx + gradY * ny) * (1 - 0.35 * (nx * nx + ny * ny));
      let value = background;
      if (mask > 0) {
        const skin = sampleLayer(hand, hand.skin, hx, hy);
        const shade = sampleLayer(hand, hand.shade, hx, hy);
        const veins = sampleLayer(hand, hand.veins, hx, hy);
        if (attack === undefined) {
          value += mask * light * 0.82 * shade * skin * (1 - veins);
        } else if (attack === 'print') {
          // a NIR photo printed on paper: flat, compressed contrast, faded veins, halftone dots
          const ht =
            Math.cos(
              (2 * Math.PI * (col * Math.cos(halftone.angle) + row * Math.sin(halftone.angle))) /
                halftone.period,
            ) *
            Math.cos(
              (2 * Math.PI * (-col * Math.sin(halftone.angle) + row * Math.cos(halftone.angle))) /
                halftone.period +
                halftone.phase,
            );
          const photo = (0.8 + 0.2 * shade) * skin * (1 - 0.5 * veins);
          value += mask * light * (0.18 + 0.55 * photo) * (1 + 0.09 * ht);
        } else {
          // a screen replay: dim in NIR, gamma-distorted, with a visible pixel grid
          const gx = col * Math.cos(grid.angle) + row * Math.sin(grid.angle);
          const gy = -col * Math.sin(grid.angle) + row * Math.cos(grid.angle);
          const pixel =
            (0.88 + 0.12 * Math.cos((2 * Math.PI * gx) / grid.period)) *
            (0.9 + 0.1 * Math.cos((2 * Math.PI * gy) / grid.period));
          const photo = (0.85 + 0.15 * shade) * skin * (1 - 0.6 * veins);
          value += mask * light * 0.7 * photo ** 0.7 * pixel;
        }
      }
      if (attack === 'screen') value += 0.06 * light;
      out[row * width + col] = Math.max(0, Math.min(255, Math.round(255 * value ** gamma)));
    }
  }
  let img = sharp(out, { raw: { width, height, channels: 1 } });
  const sigma = condition === 'blurred' ? uniform(rng, 2.6, 3.4) : uniform(rng, 0.45, 0.85);
  img = img.blur(sigma);
  if (condition === 'moved') {
    const len = 9;
    const kernel = new Array<number>(len * len).fill(0);
    const horizontal = rng() < 0.5;
    for (let i = 0; i < len; i++) kernel[horizontal ? (len >> 1) * len + i : i * len + (len >> 1)] = 1;
    img = img.convolve({ width: len, height: len, kernel });
  }
  const blurred = new Uint8Array(await img.extractChannel(0).raw().toBuffer());
  const noise = uniform(rng, 1.2, 3.0);
  for (let i = 0; i < blurred.length; i++) {
    blurred[i] = Math.max(0, Math.min(255, Math.round(blurred[i]! + gaussian(rng) * noise)));
  }
  return { width, height, data: blurred };
}
