import sharp from 'sharp';
import { type CanonicalHand, rasterise, sampleLayer, valueNoise } from './canonical.ts';
import { type HandModel, handModel, type Point, type Stroke } from './hand-model.ts';
import { createRng, gaussian, type Rng, uniform } from './rng.ts';
import { PROFILES, type Sensor, type SensorProfile } from './sensors.ts';

/**
 * Whole-hand captures that look like a real sensor's (docs/palm-pipeline.md, "Simulator"): the
 * identity's hand model with tapered fingers, thenar and hypothenar pads, flexion creases on the
 * fingers and a field of fine secondary creases, rendered with skin texture, 3-D shading, the
 * sensor's background (dark cloth, bright board with a cast shadow), pegs, NIR veins, optical
 * blur, signal-dependent noise and JPEG compression.
 */

export interface RealisticSpec {
  identity: string;
  hand: 'left' | 'right';
  capture: number;
  width: number;
  height: number;
  attack?: 'print' | 'screen';
  condition?: 'good' | 'too_far' | 'blurred' | 'moved' | 'overexposed' | 'underexposed' | 'partial';
}

export interface RealisticFrame {
  width: number;
  height: number;
  /** 8-bit grey (the luma of `rgb` for a colour sensor) */
  data: Uint8Array;
  /** interleaved RGB, colour sensors only */
  rgb?: Uint8Array;
}

interface DetailedHand {
  raster: CanonicalHand;
  model: HandModel;
  pores: (x: number, y: number) => number;
  mottle: (x: number, y: number) => number;
}

function bend(rng: Rng, a: Point, b: Point, amount: number, steps: number): Point[] {
  const nx = -(b.y - a.y) * amount * gaussian(rng);
  const ny = (b.x - a.x) * amount * gaussian(rng);
  const out: Point[] = [];
  for (let i = 0; i <= steps; i++) {
    const t = i / steps;
    const k = 4 * t * (1 - t);
    out.push({ x: a.x + (b.x - a.x) * t + nx * k, y: a.y + (b.y - a.y) * t + ny * k });
  }
  return out;
}

/** Creases across each finger at its joints (two or three lines each, as on real fingers). */
function flexionCreases(rng: Rng, model: HandModel): Stroke[] {
  const out: Stroke[] = [];
  model.fingers.forEach((f, i) => {
    const thumb = i === model.fingers.length - 1;
    const len = Math.hypot(f.b.x - f.a.x, f.b.y - f.a.y);
    const ux = (f.b.x - f.a.x) / len;
    const uy = (f.b.y - f.a.y) / len;
    for (const t of thumb ? [0.42, 0.7] : [0.18, 0.5, 0.76]) {
      const r = f.radius + ((f.tipRadius ?? f.radius) - f.radius) * t;
      const lines = rng() < 0.6 ? 2 : 1;
      for (let k = 0; k < lines; k++) {
        const off = (k - (lines - 1) / 2) * 0.014 + gaussian(rng) * 0.004;
        const cx = f.a.x + ux * (t * len + off);
        const cy = f.a.y + uy * (t * len + off);
        const half = r * uniform(rng, 0.75, 0.95);
        out.push({
          points: bend(
            rng,
            { x: cx + uy * half, y: cy - ux * half },
            { x: cx - uy * half, y: cy + ux * half },
            0.08,
            8,
          ),
          width: uniform(rng, 0.005, 0.008),
          depth: uniform(rng, 0.25, 0.4),
        });
      }
    }
  });
  return out;
}

/** Fine secondary creases: short, thin, mostly along the principal lines' directions. */
function secondaryCreases(rng: Rng, model: HandModel): Stroke[] {
  const out: Stroke[] = [];
  const n = 320 + Math.floor(rng() * 80);
  for (let i = 0; i < n; i++) {
    const c = {
      x: uniform(rng, -model.palmHalfWidth + 0.04, model.palmHalfWidth - 0.04),
      y: uniform(rng, -model.palmHalfHeight + 0.02, model.palmHalfHeight + 0.05),
    };
    const pick = rng();
    const angle =
      pick < 0.45
        ? -0.3 + gaussian(rng) * 0.3
        : pick < 0.75
          ? Math.PI / 2 + gaussian(rng) * 0.3
          : rng() * Math.PI;
    const len = uniform(rng, 0.025, 0.1);
    const dx = (Math.cos(angle) * len) / 2;
    const dy = (Math.sin(angle) * len) / 2;
    out.push({
      points: bend(rng, { x: c.x - dx, y: c.y - dy }, { x: c.x + dx, y: c.y + dy }, 0.15, 6),
      width: uniform(rng, 0.0035, 0.006),
      depth: uniform(rng, 0.06, 0.16),
    });
  }
  return out;
}

/** The identity's hand model with the detail real hands show; the identity itself is unchanged. */
export function detailedModel(identity: string, hand: 'left' | 'right'): HandModel {
  const base = handModel(identity, hand);
  const rng = createRng(`detail:${identity}:${hand}`);
  // real hands on a camera spread their fingers wider than the kiosk model's: open each finger
  // (not the thumb) about its base by a per-identity factor
  const spread = uniform(rng, 1.3, 1.9);
  const fingers = base.fingers.map((f, i) => {
    const tipRadius = f.radius * uniform(rng, 0.74, 0.84);
    if (i === base.fingers.length - 1) return { ...f, tipRadius };
    const dx = f.b.x - f.a.x;
    const dy = f.b.y - f.a.y;
    const len = Math.hypot(dx, dy);
    const angle = Math.atan2(dx, -dy) * spread;
    return { ...f, tipRadius, b: { x: f.a.x + Math.sin(angle) * len, y: f.a.y - Math.cos(angle) * len } };
  });
  const model: HandModel = {
    ...base,
    fingers,
    pads: [
      {
        c: { x: base.palmHalfWidth - 0.14, y: 0.26 },
        rx: uniform(rng, 0.18, 0.22),
        ry: uniform(rng, 0.3, 0.36),
      },
      {
        c: { x: -base.palmHalfWidth + 0.1, y: 0.2 },
        rx: uniform(rng, 0.12, 0.15),
        ry: uniform(rng, 0.3, 0.36),
      },
    ],
  };
  model.lines = [...base.lines, ...flexionCreases(rng, model), ...secondaryCreases(rng, model)];
  return model;
}

const cache = new Map<string, DetailedHand>();

function detailed(identity: string, hand: 'left' | 'right'): DetailedHand {
  const key = `${identity}\u0000${hand}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const model = detailedModel(identity, hand);
  const out: DetailedHand = {
    raster: rasterise(model),
    model,
    pores: valueNoise(`${model.textureSeed}:pores`, 0.005),
    mottle: valueNoise(`${model.textureSeed}:mottle`, 0.04),
  };
  cache.set(key, out);
  if (cache.size > 24) cache.delete(cache.keys().next().value!);
  return out;
}

/** Pegs in the gaps between the fingers and beside the thumb tip, in hand units (a peg board). */
function pegPositions(model: HandModel): Point[] {
  const f = model.fingers;
  const along = (c: (typeof f)[number], d: number): Point => {
    const len = Math.hypot(c.b.x - c.a.x, c.b.y - c.a.y);
    return { x: c.a.x + ((c.b.x - c.a.x) * d) / len, y: c.a.y + ((c.b.y - c.a.y) * d) / len };
  };
  const pegs: Point[] = [];
  for (let i = 0; i + 1 < 4; i++) {
    const a = along(f[i]!, 0.2);
    const b = along(f[i + 1]!, 0.2);
    pegs.push({ x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 });
  }
  const thumb = f[4]!;
  pegs.push({ x: thumb.b.x + 0.04, y: thumb.b.y - 0.14 });
  return pegs;
}

const SKIN_RGB: Array<[number, number, number]> = [
  [1, 0.74, 0.6],
  [0.95, 0.66, 0.5],
  [0.85, 0.56, 0.42],
  [0.7, 0.46, 0.34],
];

export async function renderRealistic(
  spec: RealisticSpec,
  sensor: Exclude<Sensor, 'simulator'>,
): Promise<RealisticFrame> {
  const P: SensorProfile = PROFILES[sensor];
  const { width, height } = spec;
  const condition = spec.condition ?? 'good';
  const rng = createRng(
    `capture:${sensor}:${spec.identity}:${spec.hand}:${spec.capture}:${spec.attack ?? 'live'}`,
  );
  const { raster, model, pores, mottle } = detailed(spec.identity, spec.hand);
  const bg = valueNoise(`background:${sensor}:${spec.capture}`, 0.02);
  const fibre = valueNoise(`fibre:${sensor}:${spec.capture}`, 0.004);

  let scale = uniform(rng, P.palmFraction[0], P.palmFraction[1]) * width;
  if (condition === 'too_far') scale *= 0.5;
  const angle = P.angle + gaussian(rng) * P.angleSpread;
  let cx = width * (P.centre.x + gaussian(rng) * 0.02);
  const cy = height * (P.centre.y + gaussian(rng) * 0.02);
  if (condition === 'partial') cx += (rng() < 0.5 ? -1 : 1) * width * 0.42;
  const mirror = spec.hand === 'left' ? -1 : 1;
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  const warp = Array.from({ length: 3 }, () => ({
    fx: uniform(rng, -4, 4),
    fy: uniform(rng, -4, 4),
    phase: uniform(rng, 0, 2 * Math.PI),
    ax: gaussian(rng) * 0.006,
    ay: gaussian(rng) * 0.006,
  }));
  // each capture spreads the fingers a little differently (less between pegs): every finger
  // turns about its root by its own small angle, blended in just outside the palm
  const bendScale = P.pegs ? 0.3 : 1;
  const bends = model.fingers.map((f, i) => {
    const len = Math.hypot(f.b.x - f.a.x, f.b.y - f.a.y);
    const delta = gaussian(rng) * (i === model.fingers.length - 1 ? 0.09 : 0.05) * bendScale;
    return {
      ax: f.a.x,
      ay: f.a.y,
      ux: (f.b.x - f.a.x) / len,
      uy: (f.b.y - f.a.y) / len,
      len,
      reach: f.radius * 1.8,
      delta,
    };
  });
  let gain = uniform(rng, 0.9, 1.08);
  if (condition === 'overexposed') gain *= 2.6;
  if (condition === 'underexposed') gain *= 0.22;
  const gradX = gaussian(rng) * 0.12;
  const gradY = gaussian(rng) * 0.12;
  const skinLevel = uniform(rng, P.skin[0], P.skin[1]) * model.albedo;
  const bgLevel = uniform(rng, P.backgroundLevel[0], P.backgroundLevel[1]);
  const tone = SKIN_RGB[Math.floor(createRng(`tone:${spec.identity}`)() * SKIN_RGB.length)]!;
  const pegs = P.pegs ? pegPositions(model) : [];
  const pegRadius = 0.055;
  // the shadow falls away from a light above and to one side (hand units)
  const shadow = { dx: uniform(rng, 0.03, 0.06), dy: uniform(rng, 0.03, 0.07) };
  const channels = P.colour ? 3 : 1;
  const out = new Uint8Array(width * height * channels);
  const rgb: [number, number, number] = [0, 0, 0];
  for (let row = 0; row < height; row++) {
    for (let col = 0; col < width; col++) {
      const u = (col - cx) / scale;
      const v = (row - cy) / scale;
      let hx = (cos * u + sin * v) * mirror;
      let hy = -sin * u + cos * v;
      for (const w of warp) {
        const s = Math.sin(w.fx * hx + w.fy * hy + w.phase);
        hx += w.ax * s;
        hy += w.ay * s;
      }
      // the board (pegs, shadow origin) stays put; the hand's own samples follow the bent fingers
      const bx = hx;
      const by = hy;
      // the finger whose axis the point lies nearest to, once turned back, owns it
      let best = Number.POSITIVE_INFINITY;
      let sx = hx;
      let sy = hy;
      for (const b of bends) {
        const dx = hx - b.ax;
        const dy = hy - b.ay;
        const t0 = dx * b.ux + dy * b.uy;
        // no bend inside the palm (the root lies 0.05 unit inside its edge), full bend 0.15 unit out
        const w = Math.max(0, Math.min(1, (t0 - 0.08) / 0.15));
        if (w === 0) continue;
        const c = Math.cos(-b.delta * w);
        const sn = Math.sin(-b.delta * w);
        const qx = c * dx - sn * dy;
        const qy = sn * dx + c * dy;
        const t = qx * b.ux + qy * b.uy;
        const side = Math.abs(qx * b.uy - qy * b.ux);
        if (t > 0 && t < b.len + b.reach && side < b.reach && side < best) {
          best = side;
          sx = b.ax + qx;
          sy = b.ay + qy;
        }
      }
      hx = sx;
      hy = sy;
      const nx = col / width - 0.5;
      const ny = row / height - 0.5;
      const light = gain * (1 + gradX * nx + gradY * ny) * (1 - 0.3 * (nx * nx + ny * ny));
      // background: cloth texture on dark, a board with the hand's soft shadow on bright
      const fx = col / width;
      const fy = row / height;
      let back = bgLevel * (1 + 0.35 * bg(fx, fy) + 0.25 * fibre(fx * 1.7, fy * 0.6));
      if (P.background === 'bright') {
        back = bgLevel * light * (1 + 0.03 * bg(fx, fy));
        let s = 0;
        for (const [ox, oy] of [
          [0, 0],
          [0.02, 0],
          [0, 0.02],
          [-0.02, -0.02],
        ] as const)
          s += sampleLayer(raster, raster.mask, hx - shadow.dx * mirror + ox, hy - shadow.dy + oy);
        back *= 1 - (P.shadow * s) / 4;
      }
      rgb[0] = back;
      rgb[1] = back * 0.96;
      rgb[2] = back * 0.95;
      for (const p of pegs) {
        const d = Math.hypot(bx - p.x, by - p.y) / pegRadius;
        if (d < 1) {
          const z = Math.sqrt(1 - d * d);
          const hl = Math.max(0, (bx - p.x) * -7 + (by - p.y) * -7 + z - 0.6) ** 3 * 1.5;
          if (P.colour) {
            rgb[0] = (0.06 + 0.1 * z) * light + hl;
            rgb[1] = (0.2 + 0.42 * z) * light + hl;
            rgb[2] = (0.14 + 0.3 * z) * light + hl;
          } else rgb[0] = (0.2 + 0.45 * z) * light + hl; // a pale plastic or metal peg
        }
      }
      const mask = sampleLayer(raster, raster.mask, hx, hy);
      if (mask > 0) {
        const skin = sampleLayer(raster, raster.skin, hx, hy) / model.albedo;
        const shade = sampleLayer(raster, raster.shade, hx, hy);
        const veins = sampleLayer(raster, raster.veins, hx, hy);
        // raising the crease depth to a power narrows the rasterised lines' Gaussian profile
        // (by √1.6) and lightens shallow wrinkles more than deep lines, as on real palms
        const crease = 1 - P.creases * 1.3 * Math.max(0, 1 - skin) ** 1.6;
        const texture = 1 + P.texture * (0.045 * pores(hx, hy) + 0.05 * mottle(hx, hy));
        let refl = skinLevel * crease * texture * (1 - P.veins * veins) * shade ** P.relief;
        if (spec.attack === 'print') {
          // a printed photo: flat (no 3-D shading), no veins, halftone dots, compressed range
          const ht = Math.cos(col * 1.9) * Math.cos(row * 1.9);
          refl = (0.2 + 0.55 * skinLevel * crease) * (1 + 0.08 * ht);
        } else if (spec.attack === 'screen') {
          const pixel = (0.88 + 0.12 * Math.cos(col * 2.4)) * (0.9 + 0.1 * Math.cos(row * 2.4));
          refl = 0.7 * (skinLevel * crease) ** 0.7 * pixel + 0.05;
        }
        const value = refl * light;
        if (P.colour) {
          // creases and shadows redden a little: blood under thin skin
          const deep = crease * texture;
          rgb[0] = rgb[0] * (1 - mask) + mask * value * tone[0];
          rgb[1] = rgb[1] * (1 - mask) + mask * value * tone[1] * deep ** 0.4;
          rgb[2] = rgb[2] * (1 - mask) + mask * value * tone[2] * deep ** 0.5;
        } else rgb[0] = rgb[0] * (1 - mask) + mask * value;
      }
      const o = (row * width + col) * channels;
      for (let c = 0; c < channels; c++)
        out[o + c] = Math.max(0, Math.min(255, Math.round(255 * Math.max(0, rgb[c]!) ** 0.9)));
    }
  }
  let img = sharp(out, { raw: { width, height, channels } });
  const frameScale = width / 640;
  let sigma = uniform(rng, P.blur[0], P.blur[1]) * frameScale;
  if (condition === 'blurred') sigma = Math.max(sigma * 4, 2.5);
  if (sigma >= 0.3) img = img.blur(sigma);
  if (condition === 'moved') {
    const len = 2 * Math.round(6 * Math.max(1, frameScale)) + 1;
    const kernel = new Array<number>(len * len).fill(0);
    const horizontal = rng() < 0.5;
    for (let i = 0; i < len; i++) kernel[horizontal ? (len >> 1) * len + i : i * len + (len >> 1)] = 1;
    img = img.convolve({ width: len, height: len, kernel });
  }
  // sharp widens a one-channel raw image to three on some operations: take the one back
  const blurred = new Uint8Array(await (channels === 1 ? img.extractChannel(0) : img).raw().toBuffer());
  const read = uniform(rng, P.readNoise[0], P.readNoise[1]);
  for (let i = 0; i < blurred.length; i++) {
    const s = Math.sqrt(read * read + P.shotNoise * blurred[i]!);
    blurred[i] = Math.max(0, Math.min(255, Math.round(blurred[i]! + gaussian(rng) * s)));
  }
  let pixels = blurred;
  if (P.jpeg) {
    const quality = Math.round(uniform(rng, P.jpeg[0], P.jpeg[1]));
    const jpeg = await sharp(blurred, { raw: { width, height, channels } }).jpeg({ quality }).toBuffer();
    pixels = new Uint8Array(
      await sharp(jpeg)
        .toColourspace(channels === 3 ? 'srgb' : 'b-w')
        .raw()
        .toBuffer(),
    );
  }
  if (channels === 1) return { width, height, data: pixels };
  const grey = new Uint8Array(width * height);
  for (let i = 0; i < grey.length; i++)
    grey[i] = Math.round(0.299 * pixels[3 * i]! + 0.587 * pixels[3 * i + 1]! + 0.114 * pixels[3 * i + 2]!);
  return { width, height, data: grey, rgb: pixels };
}
