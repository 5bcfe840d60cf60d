import {
  indexSide,
  largestComponent,
  outlineValleys,
  PEG_VALLEYS,
  STRICT_VALLEYS,
  thumbWeb,
} from './hand-contour.ts';
import type { GrayImage } from './image-io.ts';
import { bilinear } from './roi-input.ts';
import { pegHandMask, pegRoi } from './roi-pegs.ts';
import { blockAverage, foreground, maskAbove, negative } from './work-scale.ts';

/**
 * Hand localisation in a whole NIR frame: Otsu foreground, chamfer distance transform (the palm
 * is the largest inscribed circle), then a circular scan around the palm that crosses the
 * fingers, thumb and wrist; the valleys between the fingers fix rotation, the palm radius fixes
 * scale, and the thumb side tells left from right.
 */
export interface HandGeometry {
  threshold: number;
  /** share of the frame covered by the hand */
  coverage: number;
  /**
   * The image the hand was located on: the frame itself, or for frames larger than
   * WORK_SIDE (shorter side) the frame block-averaged by `scale`. `mask` and `distance` index it;
   * every coordinate and length below is in frame pixels.
   */
  work: GrayImage;
  scale: number;
  mask: Uint8Array;
  /** chamfer distance to the background, in work px ×3 */
  distance: Uint16Array;
  cx: number;
  cy: number;
  radius: number;
  /** angle (rad, image coordinates) of the direction from the palm towards the fingers */
  up: number | null;
  hand: 'left' | 'right' | null;
  fingers: number;
  touchesEdge: boolean;
  /** share of the ROI square inside the frame (1 when it lies wholly inside) */
  roiInside?: number;
  /** finger valleys (between index/middle, middle/ring, ring/little) when found, frame px */
  valleys?: Array<{ x: number; y: number }>;
  /** hand-side cues (diagnostics): thumb mass, thumb web, finger widths; +1 right, −1 left, 0 none */
  cues?: { mass: number; web: number; fingers: number };
  /** ROI square (centre, side, fingers-up angle) when the geometry fixes it */
  roi?: { cx: number; cy: number; side: number; up: number };
}

export function otsu(data: Uint8Array): number {
  // four histograms of every fourth pixel, then added: runs of equal pixels (a dark background)
  // no longer wait on the previous count (docs/palm-pipeline.md, "Speed of the capture path")
  const h0 = new Uint32Array(256);
  const h1 = new Uint32Array(256);
  const h2 = new Uint32Array(256);
  const h3 = new Uint32Array(256);
  const n4 = data.length & ~3;
  for (let i = 0; i < n4; i += 4) {
    h0[data[i]!]!++;
    h1[data[i + 1]!]!++;
    h2[data[i + 2]!]!++;
    h3[data[i + 3]!]!++;
  }
  for (let i = n4; i < data.length; i++) h0[data[i]!]!++;
  const hist = new Float64Array(256);
  for (let v = 0; v < 256; v++) hist[v] = h0[v]! + h1[v]! + h2[v]! + h3[v]!;
  return otsuOfHistogram(hist, data.length);
}

/** Otsu's threshold of a 256-bin histogram of `n` pixels: the largest between-class variance. */
export function otsuOfHistogram(hist: ArrayLike<number>, n: number): number {
  let sum = 0;
  for (let i = 0; i < 256; i++) sum += i * hist[i]!;
  let sumB = 0;
  let wB = 0;
  let best = 0;
  let threshold = 128;
  for (let t = 0; t < 256; t++) {
    wB += hist[t]!;
    if (wB === 0) continue;
    const wF = n - wB;
    if (wF === 0) break;
    sumB += t * hist[t]!;
    const mB = sumB / wB;
    const mF = (sum - sumB) / wF;
    const between = wB * wF * (mB - mF) * (mB - mF);
    if (between > best) {
      best = between;
      threshold = t;
    }
  }
  return threshold;
}

/** Chamfer distance's value for foreground before the passes. */
const CHAMFER_INF = 65000;

/**
 * Chamfer (3-4) distance to the background, in place: `d` holds CHAMFER_INF on the foreground
 * and 0 elsewhere (the caller fills it while thresholding, one pass fewer). Returns the largest
 * distance and its first index in scan order, found during the last pass.
 */
function chamfer(d: Uint16Array, w: number, h: number): { best: number; at: number } {
  let best = 0;
  let at = 0;
  // foreground on the frame border is 3 (one step from the outside); only interior pixels read
  // their neighbours, so the passes need no bounds tests
  for (let x = 0; x < w; x++) {
    if (d[x]) d[x] = 3;
    if (d[(h - 1) * w + x]) d[(h - 1) * w + x] = 3;
  }
  for (let y = 0; y < h; y++) {
    if (d[y * w]) d[y * w] = 3;
    if (d[y * w + w - 1]) d[y * w + w - 1] = 3;
  }
  for (let y = 1; y < h - 1; y++) {
    for (let i = y * w + 1, end = y * w + w - 1; i < end; i++) {
      let v = d[i]!;
      if (!v) continue;
      let t = d[i - 1]! + 3;
      if (t < v) v = t;
      t = d[i - w]! + 3;
      if (t < v) v = t;
      t = d[i - w - 1]! + 4;
      if (t < v) v = t;
      t = d[i - w + 1]! + 4;
      if (t < v) v = t;
      d[i] = v;
    }
  }
  for (let y = h - 2; y >= 1; y--) {
    for (let i = y * w + w - 2, end = y * w; i > end; i--) {
      let v = d[i]!;
      if (!v) continue;
      let t = d[i + 1]! + 3;
      if (t < v) v = t;
      t = d[i + w]! + 3;
      if (t < v) v = t;
      t = d[i + w + 1]! + 4;
      if (t < v) v = t;
      t = d[i + w - 1]! + 4;
      if (t < v) v = t;
      d[i] = v;
      // the largest distance, first in scan order (this pass runs backwards: ≥ keeps the earliest)
      if (v >= best) {
        best = v;
        at = i;
      }
    }
  }
  // border pixels are at most 3: an interior maximum above that is the maximum of the frame
  if (best > 3) return { best, at };
  best = 0;
  at = 0;
  for (let i = 0; i < d.length; i++) {
    if (d[i]! > best) {
      best = d[i]!;
      at = i;
    }
  }
  return { best, at };
}

/**
 * Shorter side (px) up to which the hand is located on the frame itself; larger frames are
 * block-averaged to about this size first (geometry cost independent of the camera resolution).
 */
export const WORK_SIDE = 300;

/** Where the ROI square sits relative to the finger valleys (see SIMULATOR_ROI). */
export interface RoiProportions {
  /** square side over the outer valley spacing (index/middle to ring/little) */
  sidePerSpacing: number;
  /** distance of the square's centre below the valley line, as a share of the side */
  centreBelow: number;
  /** weight of 1.5 × the inscribed radius in the side (geometric blend with the valley side) */
  radiusWeight: number;
  /** the square scaled by this must lie inside the frame, or the hand counts as partial */
  edgeMargin: number;
  /**
   * when set, a square that overhangs the frame is still accepted if at least this share of it
   * lies inside (the cells near and beyond the edge are then masked in the template, hand-roi.ts
   * `roiOutsideCells`); otherwise any overhang counts as partial
   */
  minInside?: number;
  /**
   * outline valleys: "up" turned this share of the way towards the direction from the palm centre
   * (the inscribed circle's) to the middle of the outer valleys (`towardsMiddle`)
   */
  centreUp?: number;
  /**
   * find the valleys on the outline only (convexity defects), not first by the finger-ring scan:
   * for real cameras, whose hands the rings rarely fit (cut by the frame, fingers touching)
   */
  outlineOnly?: boolean;
  /**
   * hands held by pegs: the ROI is the square of this × the inscribed radius around the palm's
   * centre of mass, turned to the hand's principal axis (roi-pegs.ts); the valleys, when found,
   * only tell the side (and the direction of a hand the frame does not cut)
   */
  circle?: number;
  /**
   * with `circle`, on a sensor of fixed geometry (camera and pegs fixed): the ROI side is this
   * share of the frame's shorter side instead of `circle` × the inscribed radius (roi-pegs.ts)
   */
  frameShare?: number;
  /**
   * with `circle`: the hand mask of the pegs ROI is cut this share of the way from the
   * background's mean grey to the Otsu level (roi-pegs.ts `pegHandMask`) instead of at the Otsu
   * level; the side cues keep the Otsu mask
   */
  maskLevel?: number;
  /**
   * mirror left hands so both hands share one code layout (the simulator's convention). Real
   * cameras leave every crop unmirrored: left and right hands are different identities anyway, and
   * a wrong left/right decision would then cost only the reported side, not the match.
   */
  mirrorLeft?: boolean;
}

/**
 * The simulator's ROI: side 1.645 × valley spacing (the old 1.5 × inscribed radius on average),
 * blended ¼ with 1.5 r, centre 0.69 side below the valleys; it reaches down to the wrist.
 */
export const SIMULATOR_ROI: RoiProportions = {
  sidePerSpacing: 1.645,
  centreBelow: 0.69,
  radiusWeight: 0.25,
  edgeMargin: 1.15,
  mirrorLeft: true,
};

export function locateHand(
  frame: GrayImage,
  proportions: RoiProportions = SIMULATOR_ROI,
  options: { darkHand?: boolean } = {},
): HandGeometry {
  const short = Math.min(frame.width, frame.height);
  const f = short > WORK_SIDE ? Math.floor(short / (WORK_SIDE * 0.8)) : 1;
  const work = blockAverage(frame, f);
  // a hand darker than its background is located on the negative; the measures read the true grey
  const g = locateOnWork(options.darkHand ? negative(work) : work, proportions);
  g.work = work;
  if (f <= 1) return g;
  // work pixel centres → frame pixels
  const px = (v: number) => (v + 0.5) * f - 0.5;
  g.scale = f;
  g.cx = px(g.cx);
  g.cy = px(g.cy);
  g.radius *= f;
  if (g.valleys) g.valleys = g.valleys.map((v) => ({ x: px(v.x), y: px(v.y) }));
  if (g.roi) g.roi = { cx: px(g.roi.cx), cy: px(g.roi.cy), side: g.roi.side * f, up: g.roi.up };
  return g;
}

function locateOnWork(frame: GrayImage, proportions: RoiProportions): HandGeometry {
  const { width: w, height: h, data } = frame;
  const threshold = Math.max(otsu(data), 20);
  // the mask, the chamfer's start values and their count in one pass (on the capture kernel)
  const { mask, distance, count: fg } = foreground(data, threshold, CHAMFER_INF);
  // the largest inscribed circle: the largest distance (first in scan order)
  const { best, at: bi } = chamfer(distance, w, h);
  const cx = bi % w;
  const cy = Math.floor(bi / w);
  const radius = best / 3;
  const geometry: HandGeometry = {
    threshold,
    coverage: fg / (w * h),
    work: frame,
    scale: 1,
    mask,
    distance,
    cx,
    cy,
    radius,
    up: null,
    hand: null,
    fingers: 0,
    touchesEdge: false,
  };
  if (radius < 4) return geometry;
  // the palm is the largest inscribed circle, unless a wrist as wide as the palm holds it: then
  // the largest circle well away from it (on the palm) is tried as the centre of the finger scan
  const centres = [{ x: cx, y: cy }];
  let second = 0;
  let si = -1;
  // in the same pass: the histogram of the palm (distance ≥ 1.5 r) for its median grey level
  const palmHist = new Uint32Array(256);
  let palmN = 0;
  const palmMin = radius * 1.5;
  for (let y = 0, i = 0; y < h; y++) {
    const dy = y - cy;
    for (let x = 0; x < w; x++, i++) {
      if (distance[i]! >= palmMin) {
        palmHist[data[i]!]!++;
        palmN++;
      }
      if (distance[i]! <= second) continue;
      const dx = x - cx;
      if (dx * dx + dy * dy >= radius * radius) {
        second = distance[i]!;
        si = i;
      }
    }
  }
  if (si >= 0 && second >= 0.75 * best) centres.push({ x: si % w, y: Math.floor(si / w) });
  // fingers and valleys on a tighter threshold: NIR falls off towards the outline of each finger,
  // so fingers that touch at the Otsu level are apart part of the way up to the palm's grey level.
  // Too tight a level cuts the fingers off the palm, so other levels are tried when the valleys
  // found do not look like a hand's.
  const palm = histMedian(palmHist, palmN);
  const level = (share: number) => threshold + share * (palm - threshold);
  let found: { valleys: Point[]; up: number; runs: number } | null = null;
  let runs = 0;
  for (const c of proportions.outlineOnly ? [] : centres) {
    for (const share of VALLEY_LEVELS) {
      const r = findValleys(frame, level(share), c.x, c.y, radius);
      runs = Math.max(runs, r.runs);
      if (r.valleys) {
        found = { valleys: r.valleys, up: r.up, runs: r.runs };
        break;
      }
    }
    if (found) {
      // the finger scan's centre; the scale stays that of the largest circle (the palm's size)
      geometry.cx = c.x;
      geometry.cy = c.y;
      break;
    }
  }
  geometry.fingers = found?.runs ?? runs;
  let web: Point | null = null;
  let fingerMask: Uint8Array = mask;
  if (!found) {
    // the outline's convexity defects: hands cut by the frame, fingers close together, a palm
    // centre the finger rings miss
    // at the Otsu level, then at tighter levels where touching fingers come apart
    let o: ReturnType<typeof outlineValleys> = null;
    let comp: Uint8Array = mask;
    let at = threshold;
    for (const share of OUTLINE_LEVELS) {
      at = level(share);
      // thresholded in the labelling pass itself (no mask per level)
      comp = largestComponent(data, w, h, at).comp;
      o = outlineValleys(comp, w, h, cx, cy, radius, proportions.circle ? PEG_VALLEYS : STRICT_VALLEYS);
      if (o) break;
    }
    if (!o) return proportions.circle ? pegsWithoutValleys(geometry, proportions) : geometry;
    // the defects lie on the work grid: each valley is refined sub-pixel across its gap, and
    // "up" is the normal of the line fitted through all three (the outer valleys alone tilt it
    // with each one's error)
    let refined = o.valleys;
    let up = o.up;
    // (pegs: the valleys only tell the side and the direction, kept as found)
    if (!proportions.circle) {
      for (let pass = 0; pass < 2; pass++) {
        refined = o.valleys.map((v) => refineValley(frame, at, v, up, radius));
        up = valleyNormal(refined[0]!, refined[2]!, up);
      }
      up = fittedNormal(refined, up);
      if (proportions.centreUp) up = towardsMiddle(up, refined, cx, cy, proportions.centreUp);
    }
    found = { valleys: refined, up, runs: 4 };
    web = o.web;
    geometry.fingers = 4;
    fingerMask = comp;
  }
  const { valleys, up } = found;
  geometry.up = up;
  geometry.valleys = valleys;
  const ux = Math.cos(up);
  const uy = Math.sin(up);
  // scale from the outer valley spacing, checked against the inscribed radius
  const spacing = Math.hypot(valleys[2]!.x - valleys[0]!.x, valleys[2]!.y - valleys[0]!.y);
  const fromValleys = spacing * proportions.sidePerSpacing;
  const fromRadius = radius * 1.5;
  const side = fromValleys ** (1 - proportions.radiusWeight) * fromRadius ** proportions.radiusWeight;
  // centre below the valley line, on the perpendicular through the middle of the outer valleys
  const mx = (valleys[0]!.x + valleys[2]!.x) / 2;
  const my = (valleys[0]!.y + valleys[2]!.y) / 2;
  // pegs: the square on the palm's centre of mass along the hand's axis (roi-pegs.ts)
  const pegComp = proportions.circle ? pegHandMask(data, mask, w, h, threshold, proportions.maskLevel) : null;
  // the Otsu mask's largest component, for the thumb web below
  const handComp = proportions.maskLevel === undefined ? pegComp : null;
  const roi = (pegComp &&
    pegRoi(pegComp, w, h, cx, cy, radius, proportions.circle!, up, distance, proportions.frameShare)) || {
    cx: mx - ux * side * proportions.centreBelow,
    cy: my - uy * side * proportions.centreBelow,
    side,
    up,
  };
  geometry.roi = roi;
  const bySide = (s: 'left' | 'right' | null) => (s === 'right' ? 1 : s === 'left' ? -1 : 0);
  // the thumb's mass is looked for beside the simulator's (whole-palm) square, whatever the ROI
  const refSide = spacing * SIDE_PER_VALLEY_SPACING;
  const ref = { cx: mx - ux * refSide * 0.69, cy: my - uy * refSide * 0.69, side: refSide, up };
  const mass = handSide(mask, w, h, ref);
  if (!web && fingerMask === mask)
    web = thumbWeb(handComp ?? largestComponent(mask, w, h).comp, w, h, cx, cy, radius, valleys);
  const byWeb = web ? webSide(web, roi) : null;
  const fingers = indexSide(fingerMask, w, h, valleys, up);
  geometry.cues = { mass: bySide(mass), web: bySide(byWeb), fingers: fingers?.side ?? 0 };
  // votes: the thumb mass 3, the thumb web 2, the finger widths 1 when they differ clearly (the
  // cues were right on 100 %, 96 % and 89 % of the development captures where they spoke)
  const vote =
    3 * bySide(mass) + 2 * bySide(byWeb) + (fingers && fingers.margin >= FINGER_MARGIN ? fingers.side : 0);
  const weak = fingers?.side ?? 0;
  geometry.hand = vote > 0 || (vote === 0 && weak > 0) ? 'right' : vote < 0 || weak < 0 ? 'left' : null;
  // hand cut by the frame: the ROI square (with a margin) and the valleys must lie inside, or
  // (profiles with `minInside`) enough of the bare square
  geometry.touchesEdge = outsideFrame(valleys, w, h) || squareCutByFrame(geometry, roi, proportions);
  return geometry;
}

/**
 * Whether the ROI square (with its margin) leaves the frame by more than the profile allows; sets
 * `roiInside`, the share of the bare square inside the frame (cells outside are masked, hand-roi.ts).
 */
function squareCutByFrame(
  geometry: HandGeometry,
  roi: { cx: number; cy: number; side: number; up: number },
  proportions: RoiProportions,
): boolean {
  const { width: w, height: h } = geometry.work;
  const squareOut = outsideFrame(squareCorners(roi, proportions.edgeMargin), w, h);
  geometry.roiInside = squareOut ? insideShare(roi, w, h) : 1;
  return squareOut && (proportions.minInside === undefined || geometry.roiInside < proportions.minInside);
}

/** Corners of a ROI square scaled by `margin`. */
function squareCorners(roi: { cx: number; cy: number; side: number; up: number }, margin: number): Point[] {
  const half = (roi.side / 2) * margin;
  const rx = Math.cos(roi.up);
  const ry = Math.sin(roi.up);
  return [-1, 1].flatMap((a) =>
    [-1, 1].map((b) => ({ x: roi.cx + half * (a * rx - b * ry), y: roi.cy + half * (a * ry + b * rx) })),
  );
}

const outsideFrame = (points: Point[], w: number, h: number) =>
  points.some((p) => p.x < 1 || p.y < 1 || p.x > w - 2 || p.y > h - 2);

/**
 * A peg-held hand whose finger valleys were not found: the pose comes from the silhouette alone
 * (roi-pegs.ts), the side from the thumb's mass beside the palm; unknown when the frame does not
 * cut the hand (no arm to point from).
 */
function pegsWithoutValleys(geometry: HandGeometry, proportions: RoiProportions): HandGeometry {
  const { width: w, height: h } = geometry.work;
  const { mask, distance, cx, cy, radius } = geometry;
  const roi = pegRoi(
    pegHandMask(geometry.work.data, mask, w, h, geometry.threshold, proportions.maskLevel),
    w,
    h,
    cx,
    cy,
    radius,
    proportions.circle!,
    null,
    distance,
    proportions.frameShare,
  );
  if (!roi) return geometry;
  geometry.up = roi.up;
  geometry.roi = roi;
  geometry.hand = handSide(mask, w, h, { cx: roi.cx, cy: roi.cy, side: radius * 1.5, up: roi.up });
  geometry.cues = {
    mass: geometry.hand === 'right' ? 1 : geometry.hand === 'left' ? -1 : 0,
    web: 0,
    fingers: 0,
  };
  geometry.touchesEdge = squareCutByFrame(geometry, roi, proportions);
  return geometry;
}

interface Point {
  x: number;
  y: number;
}

/** Share of a square (centre, side, angle) inside a w × h frame, sampled on a 32 × 32 grid. */
function insideShare(
  roi: { cx: number; cy: number; side: number; up: number },
  w: number,
  h: number,
): number {
  const rx = Math.cos(roi.up);
  const ry = Math.sin(roi.up);
  const n = 32;
  let inside = 0;
  for (let i = 0; i < n; i++) {
    const a = ((i + 0.5) / n - 0.5) * roi.side;
    for (let j = 0; j < n; j++) {
      const b = ((j + 0.5) / n - 0.5) * roi.side;
      const x = roi.cx + a * rx - b * ry;
      const y = roi.cy + a * ry + b * rx;
      if (x >= -0.5 && y >= -0.5 && x <= w - 0.5 && y <= h - 0.5) inside++;
    }
  }
  return inside / (n * n);
}

/** Least relative width difference of the outer (and inner) fingers that decides a hand side. */
const FINGER_MARGIN = 0.05;
/** Valley spacing × this is about 1.5 × the inscribed radius on a hand (plausibility check). */
const SIDE_PER_VALLEY_SPACING = 1.645;
/** A half line of the valleys this far (rad) off the outer line marks an outer valley as an outlier. */
const OUTLIER_TILT = 0.07;

/**
 * The four fingers on a circle around the palm: the tightest group of four consecutive narrow
 * runs (the thumb stands apart). A palm centre found too low (in a wide wrist) puts the fingers
 * outside the first ring, so wider rings are tried too.
 */
function findFingers(mask: Uint8Array, w: number, h: number, cx: number, cy: number, radius: number) {
  let runs = 0;
  const groups: Array<{ group: number[]; ring: number }> = [];
  for (const k of [1.65, 1.5, 1.85, 2.05, 2.3]) {
    const ring = radius * k;
    const narrow = ringRuns(mask, w, h, cx, cy, ring, N_RING);
    if (k === 1.65) runs = narrow.length;
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
    if (bestSpan > 2.4 || lens[3]! > 1.7 * lens[0]!) continue;
    groups.push({ group: group.map((r) => r.angle), ring });
  }
  return { runs, groups };
}

const N_RING = 360;
const wrap = (a: number) => ((a % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI);
/** Valley thresholds: shares of the way from the Otsu level up to the palm's median grey level. */
const VALLEY_LEVELS = [0.2, 0.1, 0.35, 0];
/** Levels (same scale) of the outline (convexity-defect) fallback. */
const OUTLINE_LEVELS = [0, 0.2, 0.4, 0.6];

/**
 * The three finger valleys at one grey level, or null when they do not look like a hand's: the
 * valleys must be distinct, about evenly spaced, and their spacing in proportion to the palm.
 */
function findValleys(frame: GrayImage, level: number, cx: number, cy: number, radius: number) {
  const { width: w, height: h, data } = frame;
  const tight = maskAbove(data, level);
  const fingers = findFingers(tight, w, h, cx, cy, radius);
  for (const { group, ring } of fingers.groups) {
    const valleys = valleysOf(frame, tight, level, cx, cy, radius, group, ring);
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
  if (Math.min(d01, d12) < 0.6 * Math.max(d01, d12)) return null;
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
  if (Math.cos(best.n - up) < Math.cos(OUTLIER_TILT)) {
    up = best.n;
    valleys = best.v;
  }
  const spacing = dist(valleys[0]!, valleys[2]!);
  const ratio = (spacing * SIDE_PER_VALLEY_SPACING) / (radius * 1.5);
  if (ratio < 0.7 || ratio > 1.45) return null;
  return { valleys, up };
}

/** Median of a grey-level histogram of `n` pixels. */
function histMedian(hist: Uint32Array, n: number): number {
  let acc = 0;
  for (let v = 0; v < 256; v++) {
    acc += hist[v]!;
    if (acc * 2 >= n) return v;
  }
  return 255;
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
function fittedNormal(points: Point[], prev: number): number {
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
 * (docs/palm-pipeline.md, "Capture path on real hands").
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
function valleyNormal(p: Point, q: Point, prev: number): number {
  const along = Math.atan2(q.y - p.y, q.x - p.x);
  const a = along - Math.PI / 2;
  const b = along + Math.PI / 2;
  return Math.cos(a - prev) > Math.cos(b - prev) ? a : b;
}

/**
 * Sub-pixel valley bottom: across the gap, find on each line parallel to "up" where the grey
 * level crosses the foreground threshold; the valley is the deepest crossing (parabola fit).
 */
function refineValley(frame: GrayImage, threshold: number, v: Point, up: number, radius: number): Point {
  const ux = Math.cos(up);
  const uy = Math.sin(up);
  const lx = -uy;
  const ly = ux;
  const reach = Math.max(3, radius * 0.12);
  const start = Math.max(3, radius * 0.1);
  const step = 0.25;
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

/**
 * Hand side from the thumb: the only large part of the hand beside the palm, away from the
 * fingers and the wrist. The thumb on the right of "up" (clockwise, image y down) is a right hand.
 */
function handSide(
  mask: Uint8Array,
  w: number,
  h: number,
  roi: { cx: number; cy: number; side: number; up: number },
): 'left' | 'right' | null {
  const rho = roi.side / 1.5;
  const ux = Math.cos(roi.up);
  const uy = Math.sin(roi.up);
  const reach = rho * 3;
  const x0 = Math.max(0, Math.floor(roi.cx - reach));
  const x1 = Math.min(w - 1, Math.ceil(roi.cx + reach));
  const y0 = Math.max(0, Math.floor(roi.cy - reach));
  const y1 = Math.min(h - 1, Math.ceil(roi.cy + reach));
  let right = 0;
  let left = 0;
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      if (!mask[y * w + x]) continue;
      const dx = x - roi.cx;
      const dy = y - roi.cy;
      const along = dx * ux + dy * uy;
      const across = -dx * uy + dy * ux;
      if (along < -rho || along > 1.2 * rho) continue;
      const a = Math.abs(across);
      if (a < 1.2 * rho || a > 3 * rho) continue;
      if (across > 0) right++;
      else left++;
    }
  }
  const big = Math.max(left, right);
  if (big < 0.2 * rho * rho || big < 3 * Math.min(left, right)) return null;
  return right > left ? 'right' : 'left';
}

/** Hand side from the thumb web (a deep outline defect beside the valleys): on the right of "up" is a right hand. */
function webSide(
  web: Point,
  roi: { cx: number; cy: number; side: number; up: number },
): 'left' | 'right' | null {
  const across = -(web.x - roi.cx) * Math.sin(roi.up) + (web.y - roi.cy) * Math.cos(roi.up);
  if (Math.abs(across) < roi.side * 0.3) return null;
  return across > 0 ? 'right' : 'left';
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
  return runs.filter((r) => r !== widest && r.len >= 3 && r.len <= 40);
}
