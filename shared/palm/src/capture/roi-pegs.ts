/**
 * The palm ROI of a hand held by pegs (colour and contact profiles; docs/palm-pipeline.md, "ROI
 * per sensor", _pegs_). Pegs fix the fingers, not the palm: between captures of the same hand the
 * palm still slides along its axis and turns by 10–20°, and the finger valleys beside the pegs
 * move with finger spread. These measures of the whole hand's silhouette proved stable instead:
 *
 * - **Where the arm leaves the frame** gives the coarse direction of the hand (fingers away from
 *   it): a hand on a scanner or under a camera with pegs is cut by the frame at the wrist, the
 *   widest of the crossings (a thumb or fingertips cut by the frame cross it narrower).
 * - **The palm's centre of mass** (mean shift of the hand mask in a disc of 1.4 × the inscribed
 *   radius, from the largest inscribed circle): the inscribed circle alone slides along the palm,
 *   which is longer than wide, by up to half a radius between captures.
 * - **The principal axis of the hand** (second moments of the mask within 2.4 radii of that
 *   centre, each pixel weighted (1 − d²/R²)²: palm, finger roots, thumb root and wrist), on the
 *   side of the coarse direction: it follows the whole hand's rotation, where the valley line
 *   follows finger spread. The weight falls to 0 at the rim, so what enters or leaves the disc
 *   there (a sleeve, a bangle, a thumb spread wider) moves the axis little.
 * - **The scale** (the side, and the reach of the centre and the axis): the inscribed radius, or
 *   on a sensor of fixed geometry (camera and pegs fixed, the hand lying on the platen) a fixed
 *   share of the frame: between captures of one COEP hand the inscribed radius moves by up to
 *   10 % with the thumb's spread, the device's scale does not.
 *
 * - **The mask** (`pegHandMask`): on the colour profile cut halfway between the background and
 *   the Otsu level, so a dark-skinned hand keeps its fingers and its shadowed edge.
 *
 * All in the work image's pixels; `locateHand` (hand-geometry.ts) converts to frame pixels.
 */
import { largestComponent } from './hand-contour.ts';

/** Share of the way from the background's mean grey to the Otsu level where `pegHandMask` cuts. */
export const PEG_MASK_LEVEL = 0.5;

/**
 * The hand mask the pegs ROI reads (work px): the largest component of the grey image above a
 * level `level` of the way from the background's mean grey (the pixels under the Otsu `threshold`)
 * to `threshold`; without `level`, the largest component of the Otsu `mask` itself. Otsu splits the
 * histogram between the background and the bright palm, so on a dark-skinned hand the fingers,
 * the shadowed edge of the palm and the finger creases fall under it: the mask loses fingers or
 * a strip of the palm in some captures and not in others, and the centre of mass and the axis
 * move with it (docs/palm-pipeline.md, "Pegs ROI, third pass").
 */
export function pegHandMask(
  grey: Uint8Array,
  mask: Uint8Array,
  w: number,
  h: number,
  threshold: number,
  level?: number,
): Uint8Array {
  if (level === undefined) return largestComponent(mask, w, h).comp;
  let n = 0;
  let sum = 0;
  for (let i = 0; i < w * h; i++) {
    const v = grey[i]!;
    if (v < threshold) {
      n++;
      sum += v;
    }
  }
  const background = n > 0 ? sum / n : 0;
  // largestComponent keeps pixels strictly above its level
  return largestComponent(grey, w, h, background + level * (threshold - background)).comp;
}

/** Disc (× inscribed radius) of the mean shift towards the palm's centre of mass. */
export const PEG_CENTRE_REACH = 1.4;
/** Radius (× inscribed radius) of the weighted disc whose mask moments give the hand's axis. */
export const PEG_AXIS_REACH = 2.4;
/** The axis reads every AXIS_ROW_STEP-th row of the disc: thousands of pixels either way. */
const AXIS_ROW_STEP = 2;
/** Mean-shift steps at most (it settles in 3–6 on the development hands). */
const MEAN_SHIFT_STEPS = 40;
/** Below this elongation (axis length ratio) the moments give no axis: the coarse direction stays. */
const MIN_ELONGATION = 1.05;

export interface PegPose {
  /** ROI centre (the palm's centre of mass), work px */
  cx: number;
  cy: number;
  /** direction from the palm towards the fingers (rad, image coordinates) */
  up: number;
  /** where the coarse direction came from */
  from: 'arm' | 'valleys';
}

const wrapAngle = (a: number) => Math.atan2(Math.sin(a), Math.cos(a));

/**
 * Direction (rad) from (cx, cy) to where the arm leaves the frame: the middle of the longest run of
 * hand pixels along the frame border (the wrist is wider than any finger, so fingers cut by the
 * frame elsewhere do not count); null when no run reaches `minPixels` pixels.
 */
export function armDirection(
  mask: Uint8Array,
  w: number,
  h: number,
  cx: number,
  cy: number,
  minPixels = 3,
): number | null {
  // the border, clockwise from the top-left corner, each pixel once
  const xs: number[] = [];
  const ys: number[] = [];
  const at = (x: number, y: number) => {
    xs.push(x);
    ys.push(y);
  };
  for (let x = 0; x < w; x++) at(x, 0);
  for (let y = 1; y < h; y++) at(w - 1, y);
  for (let x = w - 2; x >= 0 && h > 1; x--) at(x, h - 1);
  for (let y = h - 2; y >= 1 && w > 1; y--) at(0, y);
  const n = xs.length;
  const on = (k: number) => mask[ys[k % n]! * w + xs[k % n]!] === 1;
  // start after a background pixel so that a run crossing the start is not split
  let start = -1;
  for (let k = 0; k < n; k++) if (!on(k)) start = k;
  if (start < 0) return null;
  let best = 0;
  let bestFrom = 0;
  let run = 0;
  for (let k = start + 1; k <= start + n; k++) {
    if (on(k)) {
      run++;
      if (run > best) {
        best = run;
        bestFrom = k - run + 1;
      }
    } else run = 0;
  }
  if (best < minPixels) return null;
  let sx = 0;
  let sy = 0;
  for (let k = bestFrom; k < bestFrom + best; k++) {
    sx += xs[k % n]! - cx;
    sy += ys[k % n]! - cy;
  }
  if (sx === 0 && sy === 0) return null;
  return Math.atan2(sy, sx);
}

/** Row prefix tables of the mean shift, reused between captures (every entry is rewritten). */
let prefixScratch = new Int32Array(0);

/** The mask's centre of mass within `reach` of the centre, iterated from (cx, cy) until it settles. */
export function meanShiftCentre(
  mask: Uint8Array,
  w: number,
  h: number,
  cx: number,
  cy: number,
  reach: number,
): { x: number; y: number } {
  // per row, running counts and x sums of the mask: each step then costs one lookup per row
  const stride = w + 1;
  if (prefixScratch.length < 2 * h * stride) prefixScratch = new Int32Array(2 * h * stride);
  const count = prefixScratch.subarray(0, h * stride);
  const xsum = prefixScratch.subarray(h * stride, 2 * h * stride);
  for (let y = 0; y < h; y++) {
    let c = 0;
    let sx = 0;
    count[y * stride] = 0;
    xsum[y * stride] = 0;
    for (let x = 0, i = y * w, o = y * stride + 1; x < w; x++, i++, o++) {
      if (mask[i]) {
        c++;
        sx += x;
      }
      count[o] = c;
      xsum[o] = sx;
    }
  }
  let x0 = cx;
  let y0 = cy;
  const r2 = reach * reach;
  for (let step = 0; step < MEAN_SHIFT_STEPS; step++) {
    let sx = 0;
    let sy = 0;
    let n = 0;
    const ya = Math.max(0, Math.ceil(y0 - reach));
    const yb = Math.min(h - 1, Math.floor(y0 + reach));
    for (let y = ya; y <= yb; y++) {
      const dy = y - y0;
      const half = Math.sqrt(Math.max(0, r2 - dy * dy));
      const xa = Math.max(0, Math.ceil(x0 - half));
      const xb = Math.min(w - 1, Math.floor(x0 + half));
      if (xb < xa) continue;
      const o = y * stride;
      const k = count[o + xb + 1]! - count[o + xa]!;
      sx += xsum[o + xb + 1]! - xsum[o + xa]!;
      sy += k * y;
      n += k;
    }
    if (n === 0) break;
    const nx = sx / n;
    const ny = sy / n;
    const moved = Math.hypot(nx - x0, ny - y0);
    x0 = nx;
    y0 = ny;
    if (moved < 0.05) break;
  }
  return { x: x0, y: y0 };
}

/** Share of the largest distance to the background that still counts as a palm-sized circle. */
const LARGE_CIRCLE = 0.85;

/**
 * Of the inscribed circles almost as large as the largest (`distance`: any monotone distance to
 * the background), the centre farthest along `up`, i.e. nearest the fingers.
 */
export function fingerMostCircle(
  distance: Uint16Array,
  w: number,
  h: number,
  up: number,
): { x: number; y: number } {
  let best = 0;
  for (let i = 0; i < distance.length; i++) if (distance[i]! > best) best = distance[i]!;
  const floor = best * LARGE_CIRCLE;
  const ux = Math.cos(up);
  const uy = Math.sin(up);
  let far = Number.NEGATIVE_INFINITY;
  let at = { x: 0, y: 0 };
  for (let y = 0, i = 0; y < h; y++)
    for (let x = 0; x < w; x++, i++) {
      if (distance[i]! < floor) continue;
      const along = x * ux + y * uy;
      if (along > far) {
        far = along;
        at = { x, y };
      }
    }
  return at;
}

/**
 * The principal axis of the mask within `reach` of (cx, cy), each pixel weighted (1 − d²/reach²)²
 * (d its distance to the centre; every AXIS_ROW_STEP-th row), as the one of its two directions
 * nearest `near`; `elongation` is the ratio of the weighted axis lengths (1 for a disc).
 */
export function principalAxis(
  mask: Uint8Array,
  w: number,
  h: number,
  cx: number,
  cy: number,
  reach: number,
  near: number,
): { angle: number; elongation: number } {
  let count = 0;
  let n = 0;
  let sx = 0;
  let sy = 0;
  let sxx = 0;
  let syy = 0;
  let sxy = 0;
  const r2 = reach * reach;
  const ya = Math.max(0, Math.ceil(cy - reach));
  const yb = Math.min(h - 1, Math.floor(cy + reach));
  for (let y = ya; y <= yb; y += AXIS_ROW_STEP) {
    const dy = y - cy;
    const dy2 = dy * dy;
    const half = Math.sqrt(Math.max(0, r2 - dy2));
    const xa = Math.max(0, Math.ceil(cx - half));
    const xb = Math.min(w - 1, Math.floor(cx + half));
    for (let x = xa, i = y * w + xa; x <= xb; x++, i++) {
      if (!mask[i]) continue;
      // relative to the centre: small numbers, no cancellation
      const u = x - cx;
      const q = 1 - (u * u + dy2) / r2;
      const k = q * q;
      count++;
      n += k;
      sx += k * u;
      sy += k * dy;
      sxx += k * u * u;
      syy += k * dy2;
      sxy += k * u * dy;
    }
  }
  if (count < 3 || !(n > 0)) return { angle: near, elongation: 1 };
  const mx = sx / n;
  const my = sy / n;
  const a = sxx / n - mx * mx;
  const b = sxy / n - mx * my;
  const d = syy / n - my * my;
  const axis = 0.5 * Math.atan2(2 * b, a - d);
  const root = Math.sqrt(((a - d) / 2) ** 2 + b * b);
  const major = (a + d) / 2 + root;
  const minor = Math.max(1e-12, (a + d) / 2 - root);
  const angle = Math.cos(axis - near) >= 0 ? axis : axis + Math.PI;
  return { angle: wrapAngle(angle), elongation: Math.sqrt(major / minor) };
}

/**
 * The pose of a peg-held hand from its mask (largest component, work px) and largest inscribed
 * circle: ROI centre and fingers-up direction. `valleysUp` (the finger valleys' normal, when found)
 * gives the coarse direction of a hand the frame does not cut. Null when neither tells it.
 */
export function pegPose(
  mask: Uint8Array,
  w: number,
  h: number,
  cx: number,
  cy: number,
  radius: number,
  valleysUp: number | null,
  distance?: Uint16Array,
): PegPose | null {
  const arm = armDirection(mask, w, h, cx, cy, Math.max(3, Math.round(radius * 0.2)));
  const coarse = arm !== null ? wrapAngle(arm + Math.PI) : valleysUp;
  if (coarse === null) return null;
  // the mean shift starts from the inscribed circle nearest the fingers: a forearm as wide as the
  // palm holds circles as large as the palm's
  const start = distance ? fingerMostCircle(distance, w, h, coarse) : { x: cx, y: cy };
  const c = meanShiftCentre(mask, w, h, start.x, start.y, radius * PEG_CENTRE_REACH);
  const axis = principalAxis(mask, w, h, c.x, c.y, radius * PEG_AXIS_REACH, coarse);
  // a round blob has no axis; an axis more than 45° off the coarse direction is the palm's width
  const up =
    axis.elongation >= MIN_ELONGATION && Math.cos(axis.angle - coarse) > Math.SQRT1_2 ? axis.angle : coarse;
  return { cx: c.x, cy: c.y, up, from: arm !== null ? 'arm' : 'valleys' };
}

/**
 * The development captures' median inscribed radius as a share of the frame's shorter side (COEP,
 * sensor-profiles.ts `COLOUR_ROI`): the hand scale that `frameRadiusWeight` reads against.
 */
export const PEG_FRAME_RADIUS = 0.225;

/**
 * The ROI square of a peg-held hand (work px): `sidePerRadius` × the inscribed radius around the
 * palm's centre of mass, turned to the hand's axis. With `frameShare` (a sensor of fixed
 * geometry) the side is that share of the frame's shorter side instead, and the centre's and the
 * axis's discs are scaled from it too (radius = side / `sidePerRadius`), not from the inscribed
 * circle; `frameRadiusWeight` w then scales all three by (inscribed radius / PEG_FRAME_RADIUS of the
 * shorter side)^w, a geometric blend of the device's scale (w = 0) and the hand's (w = 1): a second
 * board or camera distance changes the first, the thumb's spread the second. Null when the hand's
 * direction is unknown.
 */
export function pegRoi(
  mask: Uint8Array,
  w: number,
  h: number,
  cx: number,
  cy: number,
  radius: number,
  sidePerRadius: number,
  valleysUp: number | null,
  distance?: Uint16Array,
  frameShare?: number,
  frameRadiusWeight = 0,
): { cx: number; cy: number; side: number; up: number } | null {
  // on a fixed-geometry sensor every reach (centre, axis, side) is in the device's units: the
  // radius the profile's side stands for, blended towards the hand's own by frameRadiusWeight
  const short = Math.min(w, h);
  const hand = radius > 0 ? (radius / (PEG_FRAME_RADIUS * short)) ** frameRadiusWeight : 1;
  const r = frameShare ? ((frameShare * short) / sidePerRadius) * hand : radius;
  const pose = pegPose(mask, w, h, cx, cy, r, valleysUp, distance);
  return pose && { cx: pose.cx, cy: pose.cy, side: r * sidePerRadius, up: pose.up };
}
