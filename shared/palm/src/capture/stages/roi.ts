/**
 * Stage 4, ROI: the palm square from the finger valleys (or, for hands held by pegs, from the
 * silhouette's centre of mass and axis, roi-pegs.ts), the hand's side from the thumb's mass, the
 * thumb web and the finger widths, whether the frame cuts the hand, and the rotation- and
 * scale-normalised crop (hand-roi.ts) with the template cells that read outside the frame. The
 * square's proportions are the sensor's (`RoiProportions`, sensor-profiles.ts names each value's
 * evidence). `placeRoi` gives the `HandGeometry` of `locateHand` (frame pixels).
 */

import type { HandGeometry } from '../geometry.ts';
import { indexSide, largestComponent, thumbWeb } from '../hand-contour.ts';
import { cropPalm, OUTSIDE_REACH, ROI_SIDE_PER_RADIUS, roiOutsideCells } from '../hand-roi.ts';
import type { GrayImage } from '../image-io.ts';
import { pegHandMask, pegRoi } from '../roi-pegs.ts';
import type { Detection, Point } from './detect.ts';
import type { FingerValleys } from './valleys.ts';

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
   * with `frameShare`: the ROI's side and reaches follow the hand's inscribed radius by this power
   * (0: the device's scale alone; roi-pegs.ts `pegRoi`)
   */
  frameRadiusWeight?: number;
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

export interface RoiParams {
  /** where the square sits relative to the valleys, per sensor (sensor-profiles.ts names the evidence of each value) */
  proportions: RoiProportions;
  /**
   * least relative width difference of the outer (and inner) fingers that lets the finger-width
   * cue vote — docs/lab/hand-side.md, "Left/right" (the cue was right on 89 % of the development captures where it spoke)
   */
  fingerMargin: number;
  /**
   * votes of the side cues: thumb mass, thumb web, finger widths — docs/lab/hand-side.md, "Left/right"
   * (right on 100 %, 96 % and 89 % of the development captures where they spoke)
   */
  votes: { mass: number; web: number; fingers: number };
  /**
   * the thumb-mass cue: hand pixels beside the palm, `along` (from, to) × ρ along "up" and `across`
   * (from, to) × ρ to either side (ρ the reference square's side / 1.5), counted when the larger side
   * holds at least `minMass` × ρ² and `dominance` × the other — docs/lab/hand-side.md, "Left/right"
   * (right on 50 of 50 development captures where it spoke; no sweep of these bounds recorded)
   */
  thumb: { along: [number, number]; across: [number, number]; minMass: number; dominance: number };
  /** the thumb web votes when it lies at least this × the ROI side across the valley line — docs/lab/hand-side.md, "Left/right" (no sweep recorded) */
  webAcross: number;
  /** ROI px (of ROI_SIZE) within which the frame edge masks a template cell (the filters' reach) — docs/lab/roi-geometry.md, "ROI per sensor" */
  outsideReach: number;
}

export const DEFAULT_ROI_PARAMS: RoiParams = {
  proportions: SIMULATOR_ROI,
  fingerMargin: 0.05,
  votes: { mass: 3, web: 2, fingers: 1 },
  thumb: { along: [-1, 1.2], across: [1.2, 3], minMass: 0.2, dominance: 3 },
  webAcross: 0.3,
  outsideReach: OUTSIDE_REACH,
};

/** The side of a capture matters exactly when its crop mirrors left hands (sensor-profiles.ts `sideMatters`). */
export function mirrorsLeft(proportions: RoiProportions): boolean {
  return proportions.mirrorLeft === true;
}

/**
 * The hand's geometry in frame pixels: the detection, the valleys found (or none), and the ROI
 * square placed from them under the sensor's proportions.
 */
export function placeRoi(
  detection: Detection,
  found: FingerValleys | null,
  runs: number,
  params: RoiParams = DEFAULT_ROI_PARAMS,
): HandGeometry {
  const g = onWork(detection, found, runs, params);
  g.work = detection.work;
  const f = detection.scale;
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

export interface RoiInput {
  frame: GrayImage;
  geometry: HandGeometry;
}

export interface RoiOutput {
  /** the ROI crop, ROI_SIZE² grey levels */
  roi: Float32Array;
  /** the hand's side; `unknown` where no cue decided it and the side does not matter; null: refused as partial */
  hand: 'left' | 'right' | 'unknown' | null;
  /** no direction, no side where it matters, or the square cut by the frame: the hand is not fully in view */
  partial: boolean;
  /** template cells that read outside the frame (profiles that accept an overhang, `minInside`); null when none */
  outside: Uint8Array | null;
}

/** The crop of a placed square, the side and whether the hand is wholly in view. */
export function runRoi(input: RoiInput, params: RoiParams = DEFAULT_ROI_PARAMS): RoiOutput {
  const { frame, geometry: g } = input;
  const mirrorLeft = mirrorsLeft(params.proportions);
  const roi = cropPalm(frame, g, mirrorLeft);
  // no side cue: refused where the crop depends on the side, `unknown` where it does not
  const hand = g.hand ?? (mirrorLeft ? null : 'unknown');
  // an ROI square that overhangs the frame (accepted by the profile): its cells there are masked
  const outside =
    params.proportions.minInside !== undefined
      ? roiOutsideCells(frame, g, mirrorLeft, params.outsideReach)
      : null;
  return { roi, hand, partial: g.up === null || hand === null || g.touchesEdge, outside };
}

function onWork(
  detection: Detection,
  found: FingerValleys | null,
  runs: number,
  params: RoiParams,
): HandGeometry {
  const proportions = params.proportions;
  const { located: frame, threshold, coverage, mask, distance, cx, cy, radius } = detection;
  const { width: w, height: h, data } = frame;
  const geometry: HandGeometry = {
    threshold,
    coverage,
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
  if (!detection.scannable) return geometry;
  geometry.fingers = found?.runs ?? runs;
  if (!found) return proportions.circle ? pegsWithoutValleys(geometry, params) : geometry;
  // the finger scan's centre; the scale stays that of the largest circle (the palm's size)
  geometry.cx = found.centre.x;
  geometry.cy = found.centre.y;
  let web = found.web;
  const fingerMask = found.fingerMask;
  const { valleys, up } = found;
  geometry.up = up;
  geometry.valleys = valleys;
  const ux = Math.cos(up);
  const uy = Math.sin(up);
  // scale from the outer valley spacing, checked against the inscribed radius
  const spacing = Math.hypot(valleys[2]!.x - valleys[0]!.x, valleys[2]!.y - valleys[0]!.y);
  const fromValleys = spacing * proportions.sidePerSpacing;
  const fromRadius = radius * ROI_SIDE_PER_RADIUS;
  const side = fromValleys ** (1 - proportions.radiusWeight) * fromRadius ** proportions.radiusWeight;
  // centre below the valley line, on the perpendicular through the middle of the outer valleys
  const mx = (valleys[0]!.x + valleys[2]!.x) / 2;
  const my = (valleys[0]!.y + valleys[2]!.y) / 2;
  // pegs: the square on the palm's centre of mass along the hand's axis (roi-pegs.ts)
  const pegComp = proportions.circle ? pegHandMask(data, mask, w, h, threshold, proportions.maskLevel) : null;
  // the Otsu mask's largest component, for the thumb web below
  const handComp = proportions.maskLevel === undefined ? pegComp : null;
  const roi = (pegComp &&
    pegRoi(
      pegComp,
      w,
      h,
      cx,
      cy,
      radius,
      proportions.circle!,
      up,
      distance,
      proportions.frameShare,
      proportions.frameRadiusWeight,
    )) || {
    cx: mx - ux * side * proportions.centreBelow,
    cy: my - uy * side * proportions.centreBelow,
    side,
    up,
  };
  geometry.roi = roi;
  const bySide = (s: 'left' | 'right' | null) => (s === 'right' ? 1 : s === 'left' ? -1 : 0);
  // the thumb's mass is looked for beside the simulator's (whole-palm) square, whatever the ROI
  const refSide = spacing * SIMULATOR_ROI.sidePerSpacing;
  const ref = {
    cx: mx - ux * refSide * SIMULATOR_ROI.centreBelow,
    cy: my - uy * refSide * SIMULATOR_ROI.centreBelow,
    side: refSide,
    up,
  };
  const mass = handSide(mask, w, h, ref, params.thumb);
  if (!web && fingerMask === mask)
    web = thumbWeb(handComp ?? largestComponent(mask, w, h).comp, w, h, cx, cy, radius, valleys);
  const byWeb = web ? webSide(web, roi, params.webAcross) : null;
  const fingers = indexSide(fingerMask, w, h, valleys, up);
  geometry.cues = { mass: bySide(mass), web: bySide(byWeb), fingers: fingers?.side ?? 0 };
  // votes: the thumb mass, the thumb web, the finger widths when they differ clearly
  const vote =
    params.votes.mass * bySide(mass) +
    params.votes.web * bySide(byWeb) +
    (fingers && fingers.margin >= params.fingerMargin ? params.votes.fingers * fingers.side : 0);
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
function pegsWithoutValleys(geometry: HandGeometry, params: RoiParams): HandGeometry {
  const proportions = params.proportions;
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
    proportions.frameRadiusWeight,
  );
  if (!roi) return geometry;
  geometry.up = roi.up;
  geometry.roi = roi;
  geometry.hand = handSide(
    mask,
    w,
    h,
    { cx: roi.cx, cy: roi.cy, side: radius * ROI_SIDE_PER_RADIUS, up: roi.up },
    params.thumb,
  );
  geometry.cues = {
    mass: geometry.hand === 'right' ? 1 : geometry.hand === 'left' ? -1 : 0,
    web: 0,
    fingers: 0,
  };
  geometry.touchesEdge = squareCutByFrame(geometry, roi, proportions);
  return geometry;
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

/**
 * Hand side from the thumb: the only large part of the hand beside the palm, away from the
 * fingers and the wrist. The thumb on the right of "up" (clockwise, image y down) is a right hand.
 */
function handSide(
  mask: Uint8Array,
  w: number,
  h: number,
  roi: { cx: number; cy: number; side: number; up: number },
  t: RoiParams['thumb'],
): 'left' | 'right' | null {
  const rho = roi.side / 1.5;
  const ux = Math.cos(roi.up);
  const uy = Math.sin(roi.up);
  const reach = rho * t.across[1];
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
      if (along < t.along[0] * rho || along > t.along[1] * rho) continue;
      const a = Math.abs(across);
      if (a < t.across[0] * rho || a > t.across[1] * rho) continue;
      if (across > 0) right++;
      else left++;
    }
  }
  const big = Math.max(left, right);
  if (big < t.minMass * rho * rho || big < t.dominance * Math.min(left, right)) return null;
  return right > left ? 'right' : 'left';
}

/** Hand side from the thumb web (a deep outline defect beside the valleys): on the right of "up" is a right hand. */
function webSide(
  web: Point,
  roi: { cx: number; cy: number; side: number; up: number },
  minAcross: number,
): 'left' | 'right' | null {
  const across = -(web.x - roi.cx) * Math.sin(roi.up) + (web.y - roi.cy) * Math.cos(roi.up);
  if (Math.abs(across) < roi.side * minAcross) return null;
  return across > 0 ? 'right' : 'left';
}
