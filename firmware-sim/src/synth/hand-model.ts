import { createRng, gaussian, type Rng, uniform } from './rng.ts';

/**
 * The identity of a synthetic hand in "hand units": palm centre at the origin, palm about one
 * unit wide, fingers towards −y, wrist towards +y, thumb towards +x (a right hand seen from the
 * scanner; left hands are mirrored when rendered, and drawn from a different seed).
 */
export interface Point {
  x: number;
  y: number;
}

export interface Capsule {
  a: Point;
  b: Point;
  radius: number;
  /** Radius at `b` when the capsule tapers (a finger towards its tip); `radius` otherwise. */
  tipRadius?: number;
}

/** A soft elliptic pad added to the palm outline (thenar and hypothenar eminences). */
export interface Pad {
  c: Point;
  rx: number;
  ry: number;
}

export interface Stroke {
  points: Point[];
  width: number;
  depth: number;
}

export interface HandModel {
  palmHalfWidth: number;
  palmHalfHeight: number;
  fingers: Capsule[];
  wrist: Capsule;
  pads?: Pad[];
  lines: Stroke[];
  veins: Stroke[];
  textureSeed: string;
  /** Overall skin reflectance in NIR. */
  albedo: number;
}

function bezier(p0: Point, p1: Point, p2: Point, p3: Point, steps: number): Point[] {
  const out: Point[] = [];
  for (let i = 0; i <= steps; i++) {
    const t = i / steps;
    const u = 1 - t;
    out.push({
      x: u * u * u * p0.x + 3 * u * u * t * p1.x + 3 * u * t * t * p2.x + t * t * t * p3.x,
      y: u * u * u * p0.y + 3 * u * u * t * p1.y + 3 * u * t * t * p2.y + t * t * t * p3.y,
    });
  }
  return out;
}

function jitter(rng: Rng, p: Point, amount: number): Point {
  return { x: p.x + gaussian(rng) * amount, y: p.y + gaussian(rng) * amount };
}

function principalLines(rng: Rng): Stroke[] {
  const j = (x: number, y: number, a = 0.05) => jitter(rng, { x, y }, a);
  const lines: Stroke[] = [];
  // heart line: little-finger edge → between index and middle finger
  lines.push({
    points: bezier(j(-0.52, -0.22), j(-0.2, -0.32), j(0.05, -0.38), j(0.22, -0.52), 40),
    width: uniform(rng, 0.011, 0.016),
    depth: uniform(rng, 0.35, 0.5),
  });
  // head line: thumb side → across the palm
  lines.push({
    points: bezier(j(0.48, -0.2), j(0.2, -0.12), j(-0.1, -0.02), j(-0.45, uniform(rng, 0.0, 0.2)), 40),
    width: uniform(rng, 0.011, 0.016),
    depth: uniform(rng, 0.35, 0.5),
  });
  // life line: arcs around the thumb ball
  lines.push({
    points: bezier(j(0.46, -0.17), j(0.12, -0.05), j(0.02, 0.3), j(0.2, 0.58), 40),
    width: uniform(rng, 0.011, 0.016),
    depth: uniform(rng, 0.35, 0.5),
  });
  if (rng() < 0.7) {
    // fate line
    const x = uniform(rng, -0.15, 0.1);
    lines.push({
      points: bezier(j(x, 0.58), j(x, 0.3), j(x, 0.0), j(x + uniform(rng, -0.1, 0.1), -0.3), 30),
      width: uniform(rng, 0.008, 0.012),
      depth: uniform(rng, 0.15, 0.3),
    });
  }
  const wrinkles = 110 + Math.floor(rng() * 50);
  for (let i = 0; i < wrinkles; i++) {
    const c = { x: uniform(rng, -0.5, 0.5), y: uniform(rng, -0.55, 0.55) };
    const angle = rng() < 0.6 ? uniform(rng, -0.5, 0.5) : uniform(rng, 0, Math.PI);
    const len = uniform(rng, 0.05, 0.22);
    const bend = gaussian(rng) * 0.03;
    const dx = (Math.cos(angle) * len) / 2;
    const dy = (Math.sin(angle) * len) / 2;
    const nx = -Math.sin(angle) * bend;
    const ny = Math.cos(angle) * bend;
    lines.push({
      points: bezier(
        { x: c.x - dx, y: c.y - dy },
        { x: c.x - dx / 3 + nx, y: c.y - dy / 3 + ny },
        { x: c.x + dx / 3 + nx, y: c.y + dy / 3 + ny },
        { x: c.x + dx, y: c.y + dy },
        10,
      ),
      width: uniform(rng, 0.006, 0.011),
      depth: uniform(rng, 0.08, 0.22),
    });
  }
  return lines;
}

function veinTree(rng: Rng): Stroke[] {
  const veins: Stroke[] = [];
  const grow = (start: Point, angle: number, width: number, length: number, depthLeft: number) => {
    const pts: Point[] = [start];
    let p = start;
    let a = angle;
    const steps = Math.max(4, Math.round(length / 0.04));
    for (let i = 0; i < steps; i++) {
      a += gaussian(rng) * 0.18;
      p = { x: p.x + Math.cos(a) * 0.04, y: p.y + Math.sin(a) * 0.04 };
      pts.push(p);
      if (depthLeft > 0 && i > 3 && rng() < 0.06) {
        grow(
          p,
          a + (rng() < 0.5 ? -1 : 1) * uniform(rng, 0.4, 0.9),
          width * 0.7,
          length * 0.6,
          depthLeft - 1,
        );
      }
    }
    veins.push({ points: pts, width, depth: uniform(rng, 0.1, 0.18) });
  };
  const trunks = 3 + Math.floor(rng() * 2);
  for (let i = 0; i < trunks; i++) {
    const x = uniform(rng, -0.35, 0.35);
    grow({ x, y: 1.3 }, -Math.PI / 2 + gaussian(rng) * 0.25, uniform(rng, 0.026, 0.036), 1.6, 1);
  }
  return veins;
}

export function handModel(identity: string, hand: 'left' | 'right'): HandModel {
  const rng = createRng(`palm:${identity}:${hand}`);
  const palmHalfWidth = uniform(rng, 0.47, 0.53);
  const palmHalfHeight = uniform(rng, 0.52, 0.58);
  const fingers: Capsule[] = [];
  const lengths = [
    uniform(rng, 0.62, 0.72),
    uniform(rng, 0.7, 0.8),
    uniform(rng, 0.65, 0.75),
    uniform(rng, 0.5, 0.58),
  ];
  const xs = [0.35, 0.12, -0.12, -0.35];
  for (let i = 0; i < 4; i++) {
    const spread = (xs[i]! * 0.45 + gaussian(rng) * 0.04) as number;
    const base = { x: xs[i]! * palmHalfWidth * 2, y: -palmHalfHeight + 0.05 };
    const len = lengths[i]!;
    fingers.push({
      a: base,
      b: { x: base.x + Math.sin(spread) * len, y: base.y - Math.cos(spread) * len },
      radius: uniform(rng, 0.1, 0.115),
    });
  }
  // thumb from the lower thumb-side edge, pointing outwards and up
  const thumbAngle = uniform(rng, 0.7, 1.0);
  const thumbBase = { x: palmHalfWidth - 0.08, y: 0.15 };
  const thumbLen = uniform(rng, 0.6, 0.72);
  fingers.push({
    a: thumbBase,
    b: { x: thumbBase.x + Math.sin(thumbAngle) * thumbLen, y: thumbBase.y - Math.cos(thumbAngle) * thumbLen },
    radius: uniform(rng, 0.12, 0.135),
  });
  const wrist = {
    a: { x: 0, y: palmHalfHeight * 0.6 },
    b: { x: 0, y: 3 },
    radius: palmHalfWidth * uniform(rng, 0.78, 0.86),
  };
  return {
    palmHalfWidth,
    palmHalfHeight,
    fingers,
    wrist,
    lines: principalLines(rng),
    veins: veinTree(rng),
    textureSeed: `${identity}:${hand}:texture`,
    albedo: uniform(rng, 0.8, 0.95),
  };
}
