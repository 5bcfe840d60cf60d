/**
 * Stage 2, valleys: the three finger valleys (index/middle, middle/ring, ring/little) and the
 * fingers-up angle from a circular scan around the palm that crosses the fingers. NIR falls off
 * towards the outline of each finger, so fingers that touch at the Otsu level come apart part of
 * the way up to the palm's grey level: the scan tries several levels (`levels`) and rings, and
 * keeps the first set of valleys that look like a hand's (distinct, about evenly spaced, in
 * proportion to the palm). When it finds none (or the profile skips it, `outlineOnly`) the
 * outline stage (`outline.ts`) looks for them on the hand's outline instead. Work pixels.
 * The ring scan was written on the simulator's renders and runs first on the ring and pegs
 * profiles (simulator, grey-bright, colour, contact-*); no sweep of its constants is recorded
 * (docs/lab/synthetic.md, "Simulator"): change one and compare `npm run palm-lab -- eval <set>
 * --sensor <profile> --json` (EER, FTA) before and after. `palm-lab/scripts/palm-geometry-diag.ts`
 * shows what the geometry found on each frame.
 */
import type { GrayImage } from '../image-io.ts';
import { bilinear } from '../roi-input.ts';
import { maskAbove } from '../work-scale.ts';
import type { Detection, Point } from './detect.ts';

export interface ValleysParams {
  /** grey levels tried, as shares of the way from the Otsu level up to the palm's median — no sweep recorded (see above) */
  levels: readonly number[];
  /** ring radii (× the inscribed radius) tried, the first counting the runs reported — no sweep recorded (see above) */
  rings: readonly number[];
  /** four fingers fan out over at most this (rad) seen from the palm: geometry of a hand, not tuned on data */
  maxFanSpan: number;
  /** the widest of four finger runs at most this × the narrowest (two merged fingers are twice as wide): not tuned on data */
  maxWidthRatio: number;
  /** the shorter valley gap at least this × the longer (a thumb web is not evenly spaced) — no sweep recorded (see above) */
  minEvenness: number;
  /** a half line of the valleys this far (rad) off the outer line marks an outer valley as an outlier — no sweep recorded (see above) */
  outlierTilt: number;
  /** valley spacing × this is about 1.5 × the inscribed radius on a hand (the simulator's hands) — no sweep recorded (see above) */
  sidePerSpacing: number;
  /** least and most (spacing × sidePerSpacing) / (1.5 r) of valleys in proportion to the palm — no sweep recorded (see above) */
  minScaleRatio: number;
  maxScaleRatio: number;
}

/** Valley spacing × this is about 1.5 × the inscribed radius on a hand (plausibility check; the simulator's ROI side). */
export const SIDE_PER_VALLEY_SPACING = 1.645;

export const DEFAULT_VALLEYS_PARAMS: ValleysParams = {
  levels: [0.2, 0.1, 0.35, 0],
  rings: [1.65, 1.5, 1.85, 2.05, 2.3],
  maxFanSpan: 2.4,
  maxWidthRatio: 1.7,
  minEvenness: 0.6,
  outlierTilt: 0.07,
  sidePerSpacing: SIDE_PER_VALLEY_SPACING,
  minScaleRatio: 0.7,
  maxScaleRatio: 1.45,
};

/** The finger valleys of a hand (work px), however found. */
export interface FingerValleys {
  /** index/middle, middle/ring, ring/little */
  valleys: Point[];
  /** angle (rad, image coordinates) from the palm towards the fingers */
  up: number;
  /** narrow runs (fingers, thumb) the scan crossed */
  runs: number;
  /** the scan's centre (the finger-ring scan's; the inscribed circle's for the outline) */
  centre: Point;
  /** the thumb web, when the outline found it */
  web: Point | null;
  /** the mask the fingers were read on (the outline's component; the Otsu mask for the rings) */
  fingerMask: Uint8Array;
}

/** The finger-ring scan's valleys (or null), and the most finger runs it crossed. */
export interface ValleysOutput {
  found: FingerValleys | null;
  runs: number;
}

/** The finger valleys by the finger-ring scan, from each scan centre in turn. */
export function runValleys(
  detection: Detection,
  params: ValleysParams = DEFAULT_VALLEYS_PARAMS,
): ValleysOutput {
  const { located, threshold, palmGrey, radius, mask } = detection;
  const level = (share: number) => threshold + share * (palmGrey - threshold);
  let runs = 0;
  for (const c of detection.centres) {
    for (const share of params.levels) {
      const r = findValleys(located, level(share), c.x, c.y, radius, params);
      runs = Math.max(runs, r.runs);
      // the finger scan's centre; the scale stays that of the largest circle (the palm's size)
      if (r.valleys)
        return {
          found: { valleys: r.valleys, up: r.up, runs: r.runs, centre: c, web: null, fingerMask: mask },
          runs: r.runs,
        };
    }
  }
  return { found: null, runs };
}

/**
 * The four fingers on a circle around the palm: the tightest group of four consecutive narrow
 * runs (the thumb stands apart). A palm centre found too low (in a wide wrist) puts the fingers
 * outside the first ring, so wider rings are tried too.
 */
function findFingers(
  mask: Uint8Array,
  w: number,
  h: number,
  cx: number,
  cy: number,
  radius: number,
  p: ValleysParams,
) {
  let runs = 0;
  const groups: Array<{ group: number[]; ring: number }> = [];
  for (const k of p.rings) {
    const ring = radius * k;
    const narrow = ringRuns(mask, w, h, cx, cy, ring, N_RING);
    if (k === p.rings[0]) runs = narrow.length;
    if (narrow.length < 4) continue;
    runs = Math.max(runs, narrow.length);
    const sorted = narrow
      .map((r) => ({ angle: (2 * Math.PI * (r.from + r.len / 2)) / N_RING, len: r.len }))
      .sort((a, b) => a.angle - b.angle);
    let bestSpan = Number.POSITIVE_INFINITY;
    let group: typeof sorted = [];
    for (let s = 0; s < sorted.length; s++) {
      const g = [0, 1, 2, 3].map((j) => sorted[(s + j) % sorted.length]!);
      const span = wrap(g[3]!.angle - g[0]!.angle);
      if (span < bestSpan) {
        bestSpan = span;
        group = g;
      }
    }
    // four fingers fan out over well under half a turn and cross the ring about equally wide
    // (two fingers merged into one run are twice as wide)
    const lens = group.map((r) => r.len).sort((a, b) => a - b);
    if (bestSpan > p.maxFanSpan || lens[3]! > p.maxWidthRatio * lens[0]!) continue;
    groups.push({ group: group.map((r) => r.angle), ring });
  }
  return { runs, groups };
}

/** Samples per ring (one a degree): the angular resolution of the finger runs, not tuned on data. */
const N_RING = 360;
/**
 * Width (ring samples, degrees) of a run that can be a finger or the thumb: narrower is noise,
 * wider is the wrist or fingers merged into one; not swept (see the module comment).
 */
const MIN_RUN = 3;
const MAX_RUN = 40;
/**
 * The sub-pixel valley search (`refineValley`): across the gap ± REFINE_REACH × r (at least 3 px),
 * starting REFINE_START × r (at least 3 px) inside it, in steps of REFINE_STEP px; the window of the
 * refinement whose gain docs/lab/roi-geometry.md ("Outline valleys, second pass (CASIA)") records
 * (whole CASIA set: FTA 2.9 → 2.65 %, EER 1.46 → 1.39 %); the window itself was not swept.
 */
const REFINE_REACH = 0.12;
const REFINE_START = 0.1;
const REFINE_STEP = 0.25;
const wrap = (a: number) => ((a % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI);

/**
 * The three finger valleys at one grey level, or null when they do not look like a hand's: the
 * valleys must be distinct, about evenly spaced, and their spacing in proportion to the palm.
 */
function findValleys(
  frame: GrayImage,
  level: number,
  cx: number,
  cy: number,
  radius: number,
  p: ValleysParams,
) {
  const { width: w, height: h, data } = frame;
  const tight = maskAbove(data, level);
  const fingers = findFingers(tight, w, h, cx, cy, radius, p);
  for (const { group, ring } of fingers.groups) {
    const valleys = valleysOf(frame, tight, level, cx, cy, radius, group, ring, p);
    if (valleys) return { runs: fingers.runs, ...valleys };
  }
  return { runs: fingers.runs, valleys: null, up: 0 };
}

/** The valleys of one group of four fingers, or null when they do not look like a hand's. */
function valleysOf(
  frame: GrayImage,
  tight: Uint8Array,
  level: number,
  cx: number,
  cy: number,
  radius: number,
  group: number[],
  ring: number,
  p: ValleysParams,
): { valleys: Point[]; up: number } | null {
  const { width: w, height: h } = frame;
  // first estimate of "up": the mean direction of the four fingers seen from the palm
  const fingersUp = Math.atan2(
    group.reduce((s, a) => s + Math.sin(a), 0),
    group.reduce((s, a) => s + Math.cos(a), 0),
  );
  let up = fingersUp;
  // the three finger valleys, in angular order: walk down each gap towards the palm
  const coarse: Point[] = [];
  for (let k = 0; k < 3; k++) {
    const v = descendGap(tight, w, h, cx, cy, ring, group[k]!, group[k + 1]!);
    if (!v) return null;
    coarse.push(v);
  }
  // the line through the outer valleys fixes the rotation; refine the valleys sub-pixel along it
  let valleys = coarse;
  for (let pass = 0; pass < 2; pass++) {
    up = valleyNormal(valleys[0]!, valleys[2]!, up);
    valleys = coarse.map((v) => refineValley(frame, level, v, up, radius));
  }
  up = valleyNormal(valleys[0]!, valleys[2]!, up);
  // three valleys of four fingers are about evenly spaced (a thumb web is not)
  const dist = (p: Point, q: Point) => Math.hypot(q.x - p.x, q.y - p.y);
  const d01 = dist(valleys[0]!, valleys[1]!);
  const d12 = dist(valleys[1]!, valleys[2]!);
  if (Math.min(d01, d12) < p.minEvenness * Math.max(d01, d12)) return null;
  // an outer valley found too deep or too shallow (a narrow gap closing early) tilts the line; of
  // the outer line and the two half lines, keep the one nearest the fingers' direction, and replace
  // a rejected outer valley by the other one mirrored through the middle valley
  const [va, vm, vb] = valleys as [Point, Point, Point];
  const mirror = (p: Point): Point => ({ x: 2 * vm.x - p.x, y: 2 * vm.y - p.y });
  const lines = [
    { n: up, v: valleys },
    { n: valleyNormal(va, vm, up), v: [va, vm, mirror(va)] },
    { n: valleyNormal(vm, vb, up), v: [mirror(vb), vm, vb] },
  ];
  const best = lines.reduce((x, y) => (Math.cos(y.n - fingersUp) > Math.cos(x.n - fingersUp) ? y : x));
  if (Math.cos(best.n - up) < Math.cos(p.outlierTilt)) {
    up = best.n;
    valleys = best.v;
  }
  const spacing = dist(valleys[0]!, valleys[2]!);
  const ratio = (spacing * p.sidePerSpacing) / (radius * 1.5);
  if (ratio < p.minScaleRatio || ratio > p.maxScaleRatio) return null;
  return { valleys, up };
}

/**
 * Walks from the gap between two fingers on the ring down to the bottom of the valley: the
 * background pixel closest to the palm centre that can be reached through background.
 */
function descendGap(
  mask: Uint8Array,
  w: number,
  h: number,
  cx: number,
  cy: number,
  ring: number,
  a: number,
  b: number,
): Point | null {
  // start in the background between the two runs, as near the middle as possible
  const n = Math.max(8, Math.ceil(ring * wrap(b - a)));
  let x = -1;
  let y = -1;
  for (let k = 0; k <= n && x < 0; k++) {
    const off = ((k % 2 ? -1 : 1) * Math.ceil(k / 2)) / n;
    const t = a + wrap(b - a) * (0.5 + off);
    const px = Math.round(cx + ring * Math.cos(t));
    const py = Math.round(cy + ring * Math.sin(t));
    if (px >= 0 && py >= 0 && px < w && py < h && !mask[py * w + px]) {
      x = px;
      y = py;
    }
  }
  if (x < 0) return null;
  const d2 = (px: number, py: number) => (px - cx) * (px - cx) + (py - cy) * (py - cy);
  for (let step = 0; step < 4 * ring; step++) {
    let bx = x;
    let by = y;
    let best = d2(x, y);
    for (let dy = -1; dy <= 1; dy++) {
      for (let dx = -1; dx <= 1; dx++) {
        const nx = x + dx;
        const ny = y + dy;
        if (nx < 0 || ny < 0 || nx >= w || ny >= h || mask[ny * w + nx]) continue;
        const d = d2(nx, ny);
        if (d < best) {
          best = d;
          bx = nx;
          by = ny;
        }
      }
    }
    if (bx === x && by === y) break;
    x = bx;
    y = by;
  }
  return { x, y };
}

/**
 * Normal of the least-squares line through points (their principal direction), on the side of the
 * previous estimate of "up".
 */
export function fittedNormal(points: Point[], prev: number): number {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  let sxx = 0;
  let syy = 0;
  let sxy = 0;
  for (const p of points) {
    sxx += (p.x - mx) ** 2;
    syy += (p.y - my) ** 2;
    sxy += (p.x - mx) * (p.y - my);
  }
  const along = 0.5 * Math.atan2(2 * sxy, sxx - syy);
  const a = along - Math.PI / 2;
  return Math.cos(a - prev) >= 0 ? a : a + Math.PI;
}

/**
 * "Up" (the valley line's normal) blended with the direction from the palm centre (cx, cy) to the
 * middle of the outer valleys, `weight` of the way (unit vectors averaged). Three valleys a few
 * pixels apart set the line's angle; the palm centre lies a palm's length from them and steadies it
 * (no sweep recorded (see above)).
 */
export function towardsMiddle(up: number, valleys: Point[], cx: number, cy: number, weight: number): number {
  const mx = (valleys[0]!.x + valleys[2]!.x) / 2 - cx;
  const my = (valleys[0]!.y + valleys[2]!.y) / 2 - cy;
  const len = Math.hypot(mx, my);
  if (len === 0) return up;
  const x = (1 - weight) * Math.cos(up) + (weight * mx) / len;
  const y = (1 - weight) * Math.sin(up) + (weight * my) / len;
  return x === 0 && y === 0 ? up : Math.atan2(y, x);
}

/** Unit normal of the valley line p → q, on the side of the previous estimate of "up". */
export function valleyNormal(p: Point, q: Point, prev: number): number {
  const along = Math.atan2(q.y - p.y, q.x - p.x);
  const a = along - Math.PI / 2;
  const b = along + Math.PI / 2;
  return Math.cos(a - prev) > Math.cos(b - prev) ? a : b;
}

/**
 * Sub-pixel valley bottom: across the gap, find on each line parallel to "up" where the grey
 * level crosses the foreground threshold; the valley is the deepest crossing (parabola fit).
 */
export function refineValley(
  frame: GrayImage,
  threshold: number,
  v: Point,
  up: number,
  radius: number,
): Point {
  const ux = Math.cos(up);
  const uy = Math.sin(up);
  const lx = -uy;
  const ly = ux;
  const reach = Math.max(3, radius * REFINE_REACH);
  const start = Math.max(3, radius * REFINE_START);
  const step = REFINE_STEP;
  const offsets: number[] = [];
  const depth: number[] = [];
  for (let t = -reach; t <= reach + 1e-9; t += 0.5) {
    // from inside the gap (above the coarse valley) down into the palm
    const bx = v.x + lx * t + ux * start;
    const by = v.y + ly * t + uy * start;
    let prev = bilinear(frame, bx, by);
    let found = Number.NaN;
    if (prev <= threshold) {
      for (let s = step; s <= start + reach; s += step) {
        const val = bilinear(frame, bx - ux * s, by - uy * s);
        if (val > threshold) {
          found = s - step + (step * (threshold - prev)) / (val - prev);
          break;
        }
        prev = val;
      }
    }
    offsets.push(t);
    depth.push(found);
  }
  let k = -1;
  for (let i = 0; i < depth.length; i++)
    if (!Number.isNaN(depth[i]!) && (k < 0 || depth[i]! > depth[k]!)) k = i;
  if (k < 0) return v;
  let t = offsets[k]!;
  let s = depth[k]!;
  const a = depth[k - 1];
  const c = depth[k + 1];
  if (a !== undefined && c !== undefined && !Number.isNaN(a) && !Number.isNaN(c)) {
    const den = a - 2 * s + c;
    if (den < 0) {
      const shift = Math.max(-1, Math.min(1, (0.5 * (a - c)) / den));
      t += shift * 0.5;
      s -= 0.25 * (a - c) * shift;
    }
  }
  const bx = v.x + lx * t + ux * start;
  const by = v.y + ly * t + uy * start;
  return { x: bx - ux * s, y: by - uy * s };
}

/** Narrow foreground runs (fingers, thumb) on a circle; the widest run (the wrist) is dropped. */
function ringRuns(mask: Uint8Array, w: number, h: number, cx: number, cy: number, R: number, N: number) {
  const ring = new Uint8Array(N);
  for (let k = 0; k < N; k++) {
    const a = (2 * Math.PI * k) / N;
    const x = Math.round(cx + R * Math.cos(a));
    const y = Math.round(cy + R * Math.sin(a));
    ring[k] = x >= 0 && y >= 0 && x < w && y < h ? mask[y * w + x]! : 0;
  }
  const start = ring.indexOf(0);
  if (start < 0) return [];
  const runs: Array<{ from: number; len: number }> = [];
  for (let k = 0; k < N; k++) {
    const idx = (start + k) % N;
    if (ring[idx]) {
      const last = runs[runs.length - 1];
      if (last && (last.from + last.len) % N === idx) last.len++;
      else runs.push({ from: idx, len: 1 });
    }
  }
  const widest = runs.reduce((m, r) => (r.len > m.len ? r : m), runs[0] ?? { from: 0, len: 0 });
  return runs.filter((r) => r !== widest && r.len >= MIN_RUN && r.len <= MAX_RUN);
}
