/**
 * Stage 1, detect: is there a hand, where is its palm and how large? The frame is block-averaged
 * to a work image of about WORK_SIDE px (geometry cost independent of the camera's resolution),
 * thresholded at Otsu's level, and the chamfer distance to the background gives the palm as the
 * largest inscribed circle. Also the palm's median grey level (the finger valleys are looked for
 * between it and the Otsu level) and, when a wrist as wide as the palm holds the largest circle, a
 * second centre for the finger scan. Everything is in work pixels (`scale` frame px each).
 */
import type { GrayImage } from '../image-io.ts';
import { blockAverage, foreground, negative } from '../work-scale.ts';

export interface DetectParams {
  /** a hand darker than its background (a bright board): located on the negative (profile data; docs/lab/synthetic.md, "Realistic renders against real captures") */
  darkHand: boolean;
  /** shorter side (px) up to which the hand is located on the frame itself — docs/lab/capture-speed.md, docs/lab/roi-geometry.md "Capture path on real hands" */
  workSide: number;
  /** larger frames are block-averaged by ⌊shorter side / (workSide × this)⌋, to 240–300 px — docs/lab/roi-geometry.md, "Capture path on real hands" */
  workShrink: number;
  /** least foreground threshold (grey level) whatever Otsu says: a floor against an all-dark frame, not tuned on data */
  minThreshold: number;
  /** least inscribed radius (work px) for the finger scan at all: a floor, not tuned on data */
  minScanRadius: number;
  /** a second scan centre when a circle away from the palm reaches this share of the largest (a wrist as wide as the palm): no sweep recorded; re-check with `npm run palm-lab -- eval <set> --sensor <profile> --json` (EER, FTA) */
  secondCentreShare: number;
  /** the palm's median grey is read where the distance is ≥ this × the inscribed radius: no sweep recorded; re-check with `npm run palm-lab -- eval <set> --sensor <profile> --json` (EER, FTA) */
  palmCore: number;
}

/**
 * Shorter side (px) up to which the hand is located on the frame itself; larger frames are
 * block-averaged to about this size first (geometry cost independent of the camera resolution).
 */
export const WORK_SIDE = 300;

export const DEFAULT_DETECT_PARAMS: DetectParams = {
  darkHand: false,
  workSide: WORK_SIDE,
  workShrink: 0.8,
  minThreshold: 20,
  minScanRadius: 4,
  secondCentreShare: 0.75,
  palmCore: 1.5,
};

export interface Point {
  x: number;
  y: number;
}

export interface Detection {
  /** the frame's size */
  frameWidth: number;
  frameHeight: number;
  /** the work image in true grey levels (the measures read it) */
  work: GrayImage;
  /** the image the hand was located on: `work`, or its negative for a dark hand */
  located: GrayImage;
  /** frame px per work px */
  scale: number;
  threshold: number;
  /** share of the frame covered by the hand */
  coverage: number;
  mask: Uint8Array;
  /** chamfer distance to the background, in work px ×3 */
  distance: Uint16Array;
  /** the largest inscribed circle (work px) */
  cx: number;
  cy: number;
  radius: number;
  /** whether the palm is large enough for the finger scan (`minScanRadius`) */
  scannable: boolean;
  /** centres for the finger scan: the inscribed circle's, then the second circle's when there is one */
  centres: Point[];
  /** the palm's median grey level (on `located`); NaN when not `scannable` */
  palmGrey: number;
}

/** The hand's foreground and palm circle in a whole frame. */
export function runDetect(frame: GrayImage, params: DetectParams = DEFAULT_DETECT_PARAMS): Detection {
  const short = Math.min(frame.width, frame.height);
  const f = short > params.workSide ? Math.floor(short / (params.workSide * params.workShrink)) : 1;
  const work = blockAverage(frame, f);
  // a hand darker than its background is located on the negative; the measures read the true grey
  const located = params.darkHand ? negative(work) : work;
  const { width: w, height: h, data } = located;
  const threshold = Math.max(otsu(data), params.minThreshold);
  // the mask, the chamfer's start values and their count in one pass (on the capture kernel)
  const { mask, distance, count: fg } = foreground(data, threshold, CHAMFER_INF);
  // the largest inscribed circle: the largest distance (first in scan order)
  const { best, at: bi } = chamfer(distance, w, h);
  const cx = bi % w;
  const cy = Math.floor(bi / w);
  const radius = best / 3;
  const detection: Detection = {
    frameWidth: frame.width,
    frameHeight: frame.height,
    work,
    located,
    scale: f,
    threshold,
    coverage: fg / (w * h),
    mask,
    distance,
    cx,
    cy,
    radius,
    scannable: radius >= params.minScanRadius,
    centres: [{ x: cx, y: cy }],
    palmGrey: Number.NaN,
  };
  if (!detection.scannable) return detection;
  // the palm is the largest inscribed circle, unless a wrist as wide as the palm holds it: then
  // the largest circle well away from it (on the palm) is tried as the centre of the finger scan
  let second = 0;
  let si = -1;
  // in the same pass: the histogram of the palm (distance ≥ palmCore × r) for its median grey level
  const palmHist = new Uint32Array(256);
  let palmN = 0;
  const palmMin = radius * params.palmCore;
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
  if (si >= 0 && second >= params.secondCentreShare * best)
    detection.centres.push({ x: si % w, y: Math.floor(si / w) });
  detection.palmGrey = histMedian(palmHist, palmN);
  return detection;
}

export function otsu(data: Uint8Array): number {
  // four histograms of every fourth pixel, then added: runs of equal pixels (a dark background)
  // no longer wait on the previous count (docs/lab/capture-speed.md)
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

/** Median of a grey-level histogram of `n` pixels. */
function histMedian(hist: Uint32Array, n: number): number {
  let acc = 0;
  for (let v = 0; v < 256; v++) {
    acc += hist[v]!;
    if (acc * 2 >= n) return v;
  }
  return 255;
}
