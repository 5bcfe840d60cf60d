/**
 * Finger valleys from the hand's outline: the largest foreground component is traced (Moore
 * neighbour tracing), its convex hull taken, and each stretch of outline between two hull
 * vertices gives a convexity defect (the outline point deepest below the hull edge). The three
 * valleys between the four fingers are the run of three consecutive deep defects that are about
 * evenly spaced and in proportion to the palm; the thumb web is the deepest defect left over.
 * This works whether or not the whole hand is in the frame (real cameras often cut the wrist,
 * the thumb or the fingertips): outline pixels on the frame border never count as valleys.
 * See docs/palm-pipeline.md ("Capture path on real hands").
 */

export interface Point {
  x: number;
  y: number;
}

/** Run tables of `largestComponent`, kept between calls (one capture after another). */
let runScratch = new Int32Array(0);

/**
 * Largest 8-connected foreground component (1) of `mask`, everything else 0. Run-based labelling
 * (horizontal runs joined by union-find when they touch, diagonals included): one pass over the
 * pixels, then work per run, not per pixel (docs/palm-pipeline.md, "Speed of the capture path").
 * Of components of equal size, the one reached first in scan order wins.
 */
export function largestComponent(
  mask: Uint8Array,
  w: number,
  h: number,
  /** foreground is `mask` above this: 0 for a 0/1 mask, a grey level to threshold an image in the same pass */
  above = 0,
): { comp: Uint8Array; size: number } {
  // runs: row, start, end (exclusive); at most ⌈w/2⌉ per row
  const cap = h * ((w + 1) >> 1) + 1;
  if (runScratch.length < 4 * cap) runScratch = new Int32Array(4 * cap);
  const rRow = runScratch.subarray(0, cap);
  const rFrom = runScratch.subarray(cap, 2 * cap);
  const rTo = runScratch.subarray(2 * cap, 3 * cap);
  const parent = runScratch.subarray(3 * cap, 4 * cap);
  let n = 0;
  const find = (a: number): number => {
    let r = a;
    while (parent[r] !== r) r = parent[r]!;
    while (parent[a] !== r) {
      const next = parent[a]!;
      parent[a] = r;
      a = next;
    }
    return r;
  };
  let prevStart = 0;
  let prevEnd = 0;
  for (let y = 0; y < h; y++) {
    const base = y * w;
    const rowStart = n;
    let p = prevStart;
    let x = 0;
    while (x < w) {
      if (mask[base + x]! <= above) {
        x++;
        continue;
      }
      const from = x;
      while (x < w && mask[base + x]! > above) x++;
      const k = n++;
      rRow[k] = y;
      rFrom[k] = from;
      rTo[k] = x;
      parent[k] = k;
      // runs of the previous row overlapping [from − 1, x] (8-connected)
      while (p < prevEnd && rTo[p]! < from) p++;
      for (let q = p; q < prevEnd && rFrom[q]! <= x; q++) {
        const a = find(q);
        const b = find(k);
        if (a !== b) {
          if (a < b) parent[b] = a;
          else parent[a] = b;
        }
      }
    }
    prevStart = rowStart;
    prevEnd = n;
  }
  // union by smaller index keeps each root at its component's first run in scan order
  const size = new Int32Array(n);
  for (let k = 0; k < n; k++) {
    const r = find(k);
    size[r] = size[r]! + rTo[k]! - rFrom[k]!;
  }
  let best = 0;
  let bestRoot = -1;
  for (let k = 0; k < n; k++) {
    if (parent[k] === k && size[k]! > best) {
      best = size[k]!;
      bestRoot = k;
    }
  }
  const comp = new Uint8Array(w * h);
  if (bestRoot >= 0) {
    for (let k = 0; k < n; k++) {
      if (parent[k] === bestRoot) comp.fill(1, rRow[k]! * w + rFrom[k]!, rRow[k]! * w + rTo[k]!);
    }
  }
  return { comp, size: best };
}

const DIRS: ReadonlyArray<readonly [number, number]> = [
  [1, 0],
  [1, 1],
  [0, 1],
  [-1, 1],
  [-1, 0],
  [-1, -1],
  [0, -1],
  [1, -1],
];

/** Outer boundary of a component (Moore neighbour tracing), in order; outside the frame is background. */
export function traceOutline(comp: Uint8Array, w: number, h: number): Point[] {
  let start = -1;
  for (let i = 0; i < comp.length; i++) {
    if (comp[i]) {
      start = i;
      break;
    }
  }
  if (start < 0) return [];
  const at = (x: number, y: number) => x >= 0 && y >= 0 && x < w && y < h && comp[y * w + x] === 1;
  const sx = start % w;
  const sy = (start - sx) / w;
  const out: Point[] = [{ x: sx, y: sy }];
  let x = sx;
  let y = sy;
  // the pixel above the first one (scan order) is background: start searching from there
  let dir = 6;
  const limit = 4 * comp.length;
  for (let step = 0; step < limit; step++) {
    let found = false;
    for (let k = 0; k < 8; k++) {
      const d = (dir + 6 + k) % 8;
      const nx = x + DIRS[d]![0];
      const ny = y + DIRS[d]![1];
      if (at(nx, ny)) {
        x = nx;
        y = ny;
        dir = d;
        found = true;
        break;
      }
    }
    if (!found) break;
    if (x === sx && y === sy) break;
    out.push({ x, y });
  }
  return out;
}

/**
 * Indices (into `pts`, increasing) of the convex hull's vertices (monotone chain). Collinear
 * points stay: fingers cut by the frame end on one straight hull edge, and each gap between
 * them must be a stretch of its own.
 */
function hullIndices(pts: Point[]): number[] {
  const sorted = pts.map((_, i) => i).sort((a, b) => pts[a]!.x - pts[b]!.x || pts[a]!.y - pts[b]!.y);
  // a pixel the trace visits twice (a one-pixel bridge) once only: a repeated point makes every
  // later cross product 0, so with collinear points kept the chains could no longer pop, and
  // points deep inside the outline (a valley's bottom) stayed on the hull
  const idx = sorted.filter(
    (i, k) => k === 0 || pts[i]!.x !== pts[sorted[k - 1]!]!.x || pts[i]!.y !== pts[sorted[k - 1]!]!.y,
  );
  const cross = (o: Point, a: Point, b: Point) => (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
  const lower: number[] = [];
  for (const i of idx) {
    while (
      lower.length >= 2 &&
      cross(pts[lower[lower.length - 2]!]!, pts[lower[lower.length - 1]!]!, pts[i]!) < 0
    )
      lower.pop();
    lower.push(i);
  }
  const upper: number[] = [];
  for (let k = idx.length - 1; k >= 0; k--) {
    const i = idx[k]!;
    while (
      upper.length >= 2 &&
      cross(pts[upper[upper.length - 2]!]!, pts[upper[upper.length - 1]!]!, pts[i]!) < 0
    )
      upper.pop();
    upper.push(i);
  }
  return [...new Set([...lower, ...upper])].sort((a, b) => a - b);
}

export interface Defect {
  /** index into the outline */
  index: number;
  point: Point;
  /** distance below the hull edge, px */
  depth: number;
  /** found inside a side of another defect (its depth measured from that side's own hull) */
  nested?: boolean;
  /** width of the gap: distance between the outline points GAP_ARC × r before and after it, px */
  opening?: number;
  /** distance from the palm centre, px */
  centre?: number;
}

/**
 * Convexity defects of a closed outline, in outline order. Where one hull edge spans several
 * gaps (a finger cut short by a dark fingertip or by the frame lies inside the hull), each side of
 * a defect is searched again against its own hull, `nested` levels deep, so every gap gives its
 * own defect (its depth measured from that hull).
 */
export function convexityDefects(outline: Point[], nested = 0): Defect[] {
  const n = outline.length;
  if (n < 8) return [];
  const hull = hullIndices(outline);
  const defects: Defect[] = [];
  for (let k = 0; k < hull.length; k++) {
    const i0 = hull[k]!;
    const i1 = k + 1 < hull.length ? hull[k + 1]! : hull[0]! + n;
    stretchDefects(outline, i0, i1, nested, defects);
  }
  return defects.sort((p, q) => p.index - q.index);
}

/**
 * The defect of the outline stretch i0 → i1 (indices may run past the end: taken modulo its
 * length) below the chord between its ends, then, `nested` more levels, those of the two halves
 * on either side of it against their own hulls.
 */
function stretchDefects(
  outline: Point[],
  i0: number,
  i1: number,
  nested: number,
  out: Defect[],
  level = 0,
): void {
  const n = outline.length;
  if (i1 - i0 < 3) return;
  const a = outline[i0 % n]!;
  const b = outline[i1 % n]!;
  const len = Math.hypot(b.x - a.x, b.y - a.y) || 1;
  const below = (i: number) => {
    const p = outline[i % n]!;
    return Math.abs((b.x - a.x) * (a.y - p.y) - (a.x - p.x) * (b.y - a.y)) / len;
  };
  let best = -1;
  let depth = 0;
  for (let i = i0 + 1; i < i1; i++) {
    const d = below(i);
    if (d > depth) {
      depth = d;
      best = i;
    }
  }
  if (best < 0) return;
  // a flat valley bottom: the middle of the outline run within 1 px of the deepest point
  let lo = best;
  let hi = best;
  while (lo - 1 > i0 && below(lo - 1) >= depth - 1) lo--;
  while (hi + 1 < i1 && below(hi + 1) >= depth - 1) hi++;
  const at = Math.round((lo + hi) / 2) % n;
  out.push(
    level
      ? { index: at, point: outline[at]!, depth, nested: true }
      : { index: at, point: outline[at]!, depth },
  );
  if (nested <= 0) return;
  // the hand lies on the side of the chord where the defect is; the hull of each half is taken on
  // the other side only (its fingertips), since the half's own hollow reaches past its chord
  const inside = Math.sign(
    (b.x - a.x) * (outline[best % n]!.y - a.y) - (b.y - a.y) * (outline[best % n]!.x - a.x),
  );
  for (const [from, to] of [
    [i0, best],
    [best, i1],
  ] as const) {
    if (to - from < 8) continue;
    const chain: Point[] = [];
    for (let i = from; i <= to; i++) chain.push(outline[i % n]!);
    const p = chain[0]!;
    const q = chain[chain.length - 1]!;
    const side = (v: Point) => Math.sign((q.x - p.x) * (v.y - p.y) - (q.y - p.y) * (v.x - p.x));
    // the chain's hull vertices in chain order (both ends are on it), those outside the chord
    const outer = hullIndices(chain).filter(
      (k) => k === 0 || k === chain.length - 1 || side(chain[k]!) === -inside,
    );
    for (let k = 0; k + 1 < outer.length; k++)
      stretchDefects(outline, from + outer[k]!, from + outer[k + 1]!, nested - 1, out, level + 1);
  }
}

/**
 * Proportions a run of three finger valleys must have, relative to the palm's inscribed radius.
 * The outer spacing of the finger valleys is about 0.95 r on a hand (the simulator's proportions;
 * 0.83–1.16 r, 1st–99th percentile, and evenness ≥ 0.64 on the 1st percentile on the CASIA
 * development subset's well-matched captures), while a run that takes the thumb web for a finger
 * valley spans 1.2–1.6 r and is uneven (median 0.61): MAX_SPACING and MIN_EVENNESS keep most of
 * those out, and where both a finger run and a web run pass, the score (`valleyRun`) picks the
 * finger run; with that score MIN_EVENNESS 0.6 (was 0.65) lowered both the FTA and the EER of the
 * whole CASIA set (docs/palm-pipeline.md, "Capture path on real hands"). MAX_SPACING was 1.3; with
 * the tilt test (MAX_TILT) and grey-dark's steadier square, 1.25 refused 2 more frames of the whole
 * CASIA set, both squares that had matched nothing of their hand (EER 0.87 → 0.82 %; 1.2: 7 more
 * frames, 0.86 %).
 */
const MIN_DEPTH = 0.3;
const MAX_VALLEY_DISTANCE = 2.6;
const MIN_SPACING = 0.55;
const MAX_SPACING = 1.25;
const MIN_EVENNESS = 0.6;
/**
 * Where several runs pass, the usual outer spacing (r) and how fast the score falls away from it
 * (Gaussian): the median of the well-matched CASIA runs is about 0.97 r, their 1st–99th percentile
 * span ± 0.17 r.
 */
const TYPICAL_SPACING = 0.97;
const SPACING_SPREAD = 0.2;
/**
 * The thumb web against a finger valley, for an outer defect of a run: the web lies nearer the palm
 * centre (CASIA development captures: 0.97–1.11 r, the run's middle valley 1.08–1.69 r) and its
 * gap is wide open GAP_ARC × r along the outline from its bottom (0.44–0.68 r; finger gaps
 * 0.12–0.46 r). A run with an outer defect nearer than WEB_NEARER × the middle valley's distance
 * and wider than WEB_OPENING × r is refused. On the whole CASIA set (0.88–0.92 and 0.40–0.45 gave
 * the same) the EER fell 1.35 → 1.17 % for 2 more frames refused (docs/palm-pipeline.md).
 */
const GAP_ARC = 0.3;
const WEB_NEARER = 0.9;
const WEB_OPENING = 0.45;
/**
 * Least depth (× r) of a defect found inside another's side. A finger whose tip the mask cuts off
 * (a darker fingertip, or the frame) lies inside the hull, and the hull edge then spans two or
 * three gaps of which only the deepest was a defect. One nested level finds the others; as shallow
 * as the outline's 0.3 r they also found knuckle and crease notches (whole CASIA set, before the
 * web test: EER 1.46 → 2.37 %); with it, at 0.5 r FTA 2.35 → 1.43 % at an unchanged EER of 1.17 %;
 * at 0.6 r 1.90 %, 1.14 %; at 0.7 r 2.03 %, 1.06 % (docs/palm-pipeline.md).
 */
const NESTED_MIN_DEPTH = 0.5;
/**
 * How far (rad) the outer valley line's normal may turn away from the direction from the palm
 * centre to the middle of the outer valleys. The finger valleys lie across the hand, facing the
 * palm centre; a run that takes the thumb web (narrow, so the web test misses it) or the little
 * finger's outer notch for a valley turns its line by 17–34° (development captures whose crops
 * matched nothing of their hand), while the runs of the well-matched captures stay within 14.5°
 * (99.5th percentile). Whole CASIA set: 12° / 15° / 17° / 20° gave EER 0.93 / 0.98 / 1.03 /
 * 1.04 % at FTA 2.09 / 1.45 / 1.37 / 1.32 % (1.20 % and 1.24 % without the test); 15° adopted
 * (docs/palm-pipeline.md, "Capture path on real hands").
 */
const MAX_TILT = (15 * Math.PI) / 180;

/** How strictly a run of three defects must look like a hand's finger valleys. */
export interface ValleyRule {
  maxSpacing: number;
  minEvenness: number;
  /** refuse a run whose outer defect looks like the thumb web (WEB_NEARER, WEB_OPENING) */
  refuseWeb?: boolean;
  /**
   * look for defects inside each defect's sides too (one level, `convexityDefects`), keeping those
   * at least this deep (× r) from their own hull
   */
  nestedDepth?: number;
  /**
   * refuse a run whose outer line's normal turns more than this (rad) away from the direction
   * from the palm centre to the middle of its outer valleys (MAX_TILT); needs the palm centre
   */
  maxTilt?: number;
}
export const STRICT_VALLEYS: ValleyRule = {
  maxSpacing: MAX_SPACING,
  minEvenness: MIN_EVENNESS,
  refuseWeb: true,
  nestedDepth: NESTED_MIN_DEPTH,
  maxTilt: MAX_TILT,
};
/**
 * The earlier, looser rule, kept for hands held by pegs: their square does not move with the
 * valleys (they only choose its quarter turn), and the strict rule refused 4 more of the 284 COEP
 * frames (docs/palm-pipeline.md, "Real-data numbers").
 */
export const PEG_VALLEYS: ValleyRule = { maxSpacing: 1.9, minEvenness: 0.5 };

/**
 * The three finger valleys (index/middle, middle/ring, ring/little, in outline order), the
 * fingers-up angle and the thumb web when found, from the outline of the hand component.
 */
export function outlineValleys(
  comp: Uint8Array,
  w: number,
  h: number,
  cx: number,
  cy: number,
  radius: number,
  rule: ValleyRule = STRICT_VALLEYS,
): { valleys: Point[]; up: number; web: Point | null } | null {
  const defects = deepDefects(comp, w, h, cx, cy, radius, rule.nestedDepth);
  const triple = valleyRun(defects, radius, rule, { x: cx, y: cy });
  if (!triple) return null;
  const valleys = triple.map((d) => d.point);
  const [a, , c] = valleys as [Point, Point, Point];
  // fingers up: the normal of the outer valley line pointing away from the palm centre
  const along = Math.atan2(c.y - a.y, c.x - a.x);
  const mx = (a.x + c.x) / 2;
  const my = (a.y + c.y) / 2;
  let up = along - Math.PI / 2;
  if (Math.cos(up) * (mx - cx) + Math.sin(up) * (my - cy) < 0) up += Math.PI;
  return { valleys, up, web: webAmong(defects, valleys) };
}

/**
 * Of the runs of three consecutive defects (in outline order) that pass `rule`, the one most like
 * a hand's finger valleys, or null. `centre` is the palm centre (the tilt test of `rule.maxTilt`;
 * without it the test is skipped).
 */
export function valleyRun(
  defects: Defect[],
  radius: number,
  rule: ValleyRule = STRICT_VALLEYS,
  centre?: Point,
): Defect[] | null {
  if (defects.length < 3) return null;
  const dist = (p: Point, q: Point) => Math.hypot(q.x - p.x, q.y - p.y);
  let best: { score: number; k: number } | null = null;
  const m = defects.length;
  for (let k = 0; k < m; k++) {
    const [a, b, c] = [defects[k]!, defects[(k + 1) % m]!, defects[(k + 2) % m]!];
    if (m === 3 && k > 0) break;
    const d1 = dist(a.point, b.point);
    const d2 = dist(b.point, c.point);
    const spacing = dist(a.point, c.point);
    const evenness = Math.min(d1, d2) / Math.max(d1, d2);
    if (evenness < rule.minEvenness) continue;
    if (spacing < MIN_SPACING * radius || spacing > rule.maxSpacing * radius) continue;
    // the three valleys lie about on a line (the middle one no more than a third of the spacing off)
    const off =
      Math.abs(
        (c.point.x - a.point.x) * (a.point.y - b.point.y) - (a.point.x - b.point.x) * (c.point.y - a.point.y),
      ) / (spacing || 1);
    if (off > spacing / 3) continue;
    // an outer defect nearer the palm centre than the middle valley and wide open is the thumb
    // web, not a finger valley (the ring/little valley hidden, the web took its place)
    const webby = (d: Defect) =>
      rule.refuseWeb === true &&
      d.centre !== undefined &&
      b.centre !== undefined &&
      d.opening !== undefined &&
      d.centre < WEB_NEARER * b.centre &&
      d.opening > WEB_OPENING * radius;
    if (webby(a) || webby(c)) continue;
    if (rule.maxTilt !== undefined && centre && lineTilt(a.point, c.point, centre) > rule.maxTilt) continue;
    // of the runs that pass, the most even, deepest, straightest, nearest the usual spacing: where
    // four deep defects give two overlapping runs, the one that takes the thumb web for a finger
    // valley is wider (1.1–1.25 r) and bends more (the web lies towards the wrist)
    const score =
      evenness *
      Math.min(a.depth, b.depth, c.depth) *
      (1 - (2 * off) / spacing) *
      Math.exp(-(((spacing / radius - TYPICAL_SPACING) / SPACING_SPREAD) ** 2));
    if (!best || score > best.score) best = { score, k };
  }
  if (!best) return null;
  const start = best.k;
  return [0, 1, 2].map((j) => defects[(start + j) % m]!);
}

/**
 * Angle (rad, 0 to π/2) between the normal of the line a → c and the direction from `centre` to the
 * middle of a and c: 0 when the line lies square across that direction.
 */
export function lineTilt(a: Point, c: Point, centre: Point): number {
  const ax = c.x - a.x;
  const ay = c.y - a.y;
  const mx = (a.x + c.x) / 2 - centre.x;
  const my = (a.y + c.y) / 2 - centre.y;
  const len = Math.hypot(ax, ay) * Math.hypot(mx, my);
  if (len === 0) return Math.PI / 2;
  return Math.asin(Math.min(1, Math.abs(ax * mx + ay * my) / len));
}

/** The deepest defect that is none of the finger valleys (and not next to one): the thumb web. */
function webAmong(defects: Defect[], valleys: Point[]): Point | null {
  const [a, , c] = valleys as [Point, Point, Point];
  const spacing = Math.hypot(c.x - a.x, c.y - a.y);
  const rest = defects.filter((d) =>
    valleys.every((v) => Math.hypot(v.x - d.point.x, v.y - d.point.y) > 0.3 * spacing),
  );
  return rest.length ? rest.reduce((p, q) => (q.depth > p.depth ? q : p)).point : null;
}

/** The thumb web of a hand whose finger valleys are known (the deepest other outline defect). */
export function thumbWeb(
  comp: Uint8Array,
  w: number,
  h: number,
  cx: number,
  cy: number,
  radius: number,
  valleys: Point[],
): Point | null {
  return webAmong(deepDefects(comp, w, h, cx, cy, radius), valleys);
}

/** Convexity defects deep enough to separate fingers, off the frame border, near the palm. */
function deepDefects(
  comp: Uint8Array,
  w: number,
  h: number,
  cx: number,
  cy: number,
  radius: number,
  /** with nested defects (one level), this deep at least (× r) */
  nestedDepth?: number,
): Defect[] {
  const outline = traceOutline(comp, w, h);
  const onBorder = (p: Point) => p.x <= 1 || p.y <= 1 || p.x >= w - 2 || p.y >= h - 2;
  const defectsOf = convexityDefects(outline, nestedDepth === undefined ? 0 : 1);
  const n = outline.length;
  const arc = Math.max(2, Math.round(GAP_ARC * radius));
  for (const d of defectsOf) {
    const p = outline[(d.index - arc + n * 4) % n]!;
    const q = outline[(d.index + arc) % n]!;
    d.opening = Math.hypot(p.x - q.x, p.y - q.y);
    d.centre = Math.hypot(d.point.x - cx, d.point.y - cy);
  }
  return defectsOf.filter(
    (d) =>
      // `nested` is set only by the nested pass, which runs only with a `nestedDepth`
      d.depth >= (d.nested ? nestedDepth! : MIN_DEPTH) * radius &&
      !onBorder(d.point) &&
      d.centre! <= MAX_VALLEY_DISTANCE * radius,
  );
}

/**
 * Hand side from the fingers: the little finger is the thinnest of the four and the index the
 * widest of the outer two, the middle finger wider than the ring finger. Each finger's width is
 * measured along the valley line, a third of the valley spacing above it. Returns the side of the
 * index finger across "up" (+1: the right of up, −1: the left) with a confidence (relative width
 * difference), or null when a finger cannot be measured.
 */
export function indexSide(
  mask: Uint8Array,
  w: number,
  h: number,
  valleys: Point[],
  up: number,
): { side: 1 | -1; margin: number } | null {
  const [a, b, c] = valleys as [Point, Point, Point];
  const spacing = Math.hypot(c.x - a.x, c.y - a.y);
  const lx = (c.x - a.x) / spacing;
  const ly = (c.y - a.y) / spacing;
  const ux = Math.cos(up);
  const uy = Math.sin(up);
  const at = (x: number, y: number) => {
    const X = Math.round(x);
    const Y = Math.round(y);
    return X >= 0 && Y >= 0 && X < w && Y < h && mask[Y * w + X] === 1;
  };
  const width = (p: Point, hgt: number) => {
    const x = p.x + ux * hgt;
    const y = p.y + uy * hgt;
    if (!at(x, y)) return Number.NaN;
    let lo = 0;
    let hi = 0;
    const max = spacing;
    while (lo < max && at(x - lx * (lo + 1), y - ly * (lo + 1))) lo++;
    while (hi < max && at(x + lx * (hi + 1), y + ly * (hi + 1))) hi++;
    if (lo >= max || hi >= max) return Number.NaN;
    return lo + hi + 1;
  };
  const mid = (p: Point, q: Point) => ({ x: (p.x + q.x) / 2, y: (p.y + q.y) / 2 });
  const outA = { x: a.x - (b.x - a.x) / 2, y: a.y - (b.y - a.y) / 2 };
  const outC = { x: c.x + (c.x - b.x) / 2, y: c.y + (c.y - b.y) / 2 };
  let z = 0;
  let n = 0;
  // the outer fingers (index against little, about 20 % apart) count fully, the inner ones
  // (middle against ring, a few per cent) half; three heights above the valley line
  for (const k of [0.25, 0.35, 0.45]) {
    const [wa, wab, wbc, wc] = [outA, mid(a, b), mid(b, c), outC].map((p) => width(p, spacing * k)) as [
      number,
      number,
      number,
      number,
    ];
    if (!Number.isNaN(wa) && !Number.isNaN(wc)) {
      z += (wa - wc) / ((wa + wc) / 2);
      n++;
    }
    if (!Number.isNaN(wab) && !Number.isNaN(wbc)) {
      z += (0.5 * (wab - wbc)) / ((wab + wbc) / 2);
      n++;
    }
  }
  z /= Math.max(1, n);
  if (n === 0 || z === 0) return null;
  // index on a's side when z > 0; a's side across "up"
  const across = -(a.x - b.x) * uy + (a.y - b.y) * ux;
  const aSide = across > 0 ? 1 : -1;
  return { side: (z > 0 ? aSide : -aSide) as 1 | -1, margin: Math.abs(z) };
}
