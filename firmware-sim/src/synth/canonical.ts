import type { Capsule, HandModel, Point, Stroke } from './hand-model.ts';
import { createRng } from './rng.ts';

/** A hand rasterised once in hand units; captures resample it with their own geometry. */
export interface CanonicalHand {
  width: number;
  height: number;
  /** hand units per pixel */
  unit: number;
  x0: number;
  y0: number;
  mask: Float32Array;
  /** 3-D shading of a rounded hand (1 in the middle, falling towards the outline). */
  shade: Float32Array;
  /** skin reflectance with creases (visible in any print of the hand). */
  skin: Float32Array;
  /** sub-surface vein darkening (only a live hand under NIR shows it). */
  veins: Float32Array;
}

const UNIT = 0.007;
const X0 = -1.45;
const Y0 = -1.8;
const W = Math.round(2.9 / UNIT);
const H = Math.round(3.6 / UNIT);

/** Distance from p to the segment ab, and where along it (0 at a, 1 at b) the nearest point is. */
function segNearest(px: number, py: number, a: Point, b: Point): { d: number; t: number } {
  const vx = b.x - a.x;
  const vy = b.y - a.y;
  const len2 = vx * vx + vy * vy;
  let t = len2 > 0 ? ((px - a.x) * vx + (py - a.y) * vy) / len2 : 0;
  t = Math.max(0, Math.min(1, t));
  const dx = px - (a.x + t * vx);
  const dy = py - (a.y + t * vy);
  return { d: Math.sqrt(dx * dx + dy * dy), t };
}

function segDistance(px: number, py: number, a: Point, b: Point): number {
  return segNearest(px, py, a, b).d;
}

function strokeInto(layer: Float32Array, stroke: Stroke): void {
  const reach = stroke.width * 3;
  const inv = 1 / (2 * stroke.width * stroke.width);
  for (let s = 1; s < stroke.points.length; s++) {
    const a = stroke.points[s - 1]!;
    const b = stroke.points[s]!;
    const c0 = Math.max(0, Math.floor((Math.min(a.x, b.x) - reach - X0) / UNIT));
    const c1 = Math.min(W - 1, Math.ceil((Math.max(a.x, b.x) + reach - X0) / UNIT));
    const r0 = Math.max(0, Math.floor((Math.min(a.y, b.y) - reach - Y0) / UNIT));
    const r1 = Math.min(H - 1, Math.ceil((Math.max(a.y, b.y) + reach - Y0) / UNIT));
    for (let r = r0; r <= r1; r++) {
      const py = Y0 + r * UNIT;
      for (let c = c0; c <= c1; c++) {
        const d = segDistance(X0 + c * UNIT, py, a, b);
        if (d > reach) continue;
        const v = stroke.depth * Math.exp(-d * d * inv);
        const i = r * W + c;
        if (v > layer[i]!) layer[i] = v;
      }
    }
  }
}

function capsuleDepth(c: Capsule, x: number, y: number): number {
  if (c.tipRadius === undefined) return c.radius - segDistance(x, y, c.a, c.b);
  const n = segNearest(x, y, c.a, c.b);
  return c.radius + (c.tipRadius - c.radius) * n.t - n.d;
}

/** Signed inward depth (hand units) of a point: > 0 inside the hand. */
function inwardDepth(model: HandModel, x: number, y: number): number {
  let depth = capsuleDepth(model.wrist, x, y);
  for (const f of model.fingers) depth = Math.max(depth, capsuleDepth(f, x, y));
  for (const p of model.pads ?? []) {
    const q = Math.hypot((x - p.c.x) / p.rx, (y - p.c.y) / p.ry);
    depth = Math.max(depth, (1 - q) * Math.min(p.rx, p.ry));
  }
  // palm: rounded box
  const qx = Math.abs(x) - (model.palmHalfWidth - 0.22);
  const qy = Math.abs(y) - (model.palmHalfHeight - 0.22);
  const outside = Math.hypot(Math.max(qx, 0), Math.max(qy, 0)) + Math.min(Math.max(qx, qy), 0);
  return Math.max(depth, 0.22 - outside);
}

/** Smooth random field in hand units (bilinear value noise on a 256² lattice of `spacing`). */
export function valueNoise(seed: string, spacing: number): (x: number, y: number) => number {
  const rng = createRng(seed);
  const n = 256;
  const grid = new Float32Array(n * n);
  for (let i = 0; i < grid.length; i++) grid[i] = rng() * 2 - 1;
  const m = n - 1;
  // no closure per call: tsx names every closure it creates (slow in a per-pixel loop)
  return (x, y) => {
    const gx = (x - X0) / spacing;
    const gy = (y - Y0) / spacing;
    const ix = Math.floor(gx);
    const iy = Math.floor(gy);
    const fx = gx - ix;
    const fy = gy - iy;
    const x0 = ix & m;
    const x1 = (ix + 1) & m;
    const r0 = (iy & m) * n;
    const r1 = ((iy + 1) & m) * n;
    const top = grid[r0 + x0]! * (1 - fx) + grid[r0 + x1]! * fx;
    const bottom = grid[r1 + x0]! * (1 - fx) + grid[r1 + x1]! * fx;
    return top * (1 - fy) + bottom * fy;
  };
}

export function rasterise(model: HandModel): CanonicalHand {
  const mask = new Float32Array(W * H);
  const shade = new Float32Array(W * H);
  const lines = new Float32Array(W * H);
  const veins = new Float32Array(W * H);
  for (const s of model.lines) strokeInto(lines, s);
  for (const s of model.veins) strokeInto(veins, s);
  const fine = valueNoise(`${model.textureSeed}:fine`, 0.02);
  const coarse = valueNoise(`${model.textureSeed}:coarse`, 0.09);
  const skin = new Float32Array(W * H);
  const edge = UNIT * 1.2;
  for (let r = 0; r < H; r++) {
    const y = Y0 + r * UNIT;
    for (let c = 0; c < W; c++) {
      const x = X0 + c * UNIT;
      const i = r * W + c;
      const d = inwardDepth(model, x, y);
      if (d < -edge) continue;
      mask[i] = Math.min(1, Math.max(0, 0.5 + d / (2 * edge)));
      const t = Math.min(1, Math.max(0, d / 0.16));
      shade[i] = 0.35 + 0.65 * Math.sqrt(1 - (1 - t) * (1 - t));
      skin[i] = model.albedo * (1 - lines[i]!) * (1 + 0.05 * fine(x, y) + 0.04 * coarse(x, y));
    }
  }
  return { width: W, height: H, unit: UNIT, x0: X0, y0: Y0, mask, shade, skin, veins };
}

/** Bilinear sample of one layer at hand coordinates (x, y); 0 outside the raster. */
export function sampleLayer(hand: CanonicalHand, layer: Float32Array, x: number, y: number): number {
  const gx = (x - hand.x0) / hand.unit;
  const gy = (y - hand.y0) / hand.unit;
  const ix = Math.floor(gx);
  const iy = Math.floor(gy);
  if (ix < 0 || iy < 0 || ix >= hand.width - 1 || iy >= hand.height - 1) return 0;
  const fx = gx - ix;
  const fy = gy - iy;
  const i = iy * hand.width + ix;
  const top = layer[i]! * (1 - fx) + layer[i + 1]! * fx;
  const bottom = layer[i + hand.width]! * (1 - fx) + layer[i + hand.width + 1]! * fx;
  return top * (1 - fy) + bottom * fy;
}
