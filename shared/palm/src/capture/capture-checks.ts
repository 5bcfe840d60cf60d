import {
  blockSumsSimd,
  captureSimdAvailable,
  type HandSums,
  handSumsSimd,
  lagBuffer,
  lagSums,
} from './capture-kernel.ts';
import type { HandGeometry } from './geometry.ts';
import type { GrayImage } from './image-io.ts';
import { ROI_SIZE } from './model-graph.ts';

/** Image measurements behind the quality and liveness decisions (all scale-free). */
export interface CaptureMeasures {
  /** mean grey level of the hand */
  handMean: number;
  /** share of hand pixels at ≥ 250 */
  saturated: number;
  /** palm radius relative to the frame's shorter side */
  relativeRadius: number;
  /** fine-scale over coarse-scale Gabor energy of the ROI (drops with defocus blur) */
  sharpness: number;
  /** max/min of the x and y gradient energies in the ROI (rises with motion blur) */
  anisotropy: number;
  /** largest normalised autocorrelation of the fine residual at 2–5 px lags (halftone, pixel grid) */
  periodicity: number;
  /** grey level 1–3 px inside the outline over 12–20 px inside (a round, live hand darkens at its edge) */
  edgeFalloff: number;
  /**
   * Relative (log-domain) contrast of the central palm at vein scale: standard deviation of
   * log(smooth at 0.05 r / smooth at 0.2 r), r the palm radius. Gain-free and scale-free. Sub-surface
   * veins and creases of a live hand give about 0.04–0.08; a print's paper-white and ink floor and a
   * screen's black-level glow and gamma compress the tonal range, to about 0.025–0.05.
   */
  veinContrast: number;
}

export function measureRoi(roi: Float32Array): { anisotropy: number } {
  const n = ROI_SIZE;
  let gx = 0;
  let gy = 0;
  for (let r = 1; r < n - 1; r++) {
    for (let c = 1; c < n - 1; c++) {
      const i = r * n + c;
      const dx = roi[i + 1]! - roi[i - 1]!;
      const dy = roi[i + n]! - roi[i - n]!;
      gx += dx * dx;
      gy += dy * dy;
    }
  }
  return {
    anisotropy: (Math.max(gx, gy) + 1e-6) / (Math.min(gx, gy) + 1e-6),
  };
}

/**
 * Gaussian-like smoothing of any σ in O(1) per pixel: two passes along rows, then two along
 * columns, of an "extended box" (integer half-width r plus fractional end taps, so the variance
 * is exactly σ²/2 per pass and the result varies smoothly with σ). Edges are replicated.
 */
function smooth(src: Float32Array, w: number, h: number, sigma: number): Float32Array {
  const v = (sigma * sigma) / 2;
  const r = Math.floor((Math.sqrt(1 + 12 * v) - 1) / 2);
  const alpha = (v * (2 * r + 1) - (r * (r + 1) * (2 * r + 1)) / 3) / (2 * (r + 1) ** 2 - 2 * v);
  const norm = 1 / (2 * r + 1 + 2 * alpha);
  const pad = r + 1;
  const line = new Float64Array(Math.max(w, h) + 2 * pad);
  const prefix = new Float64Array(line.length + 1);
  const out = Float32Array.from(src);
  const run = (len: number, lines: number, step: number, stride: number) => {
    for (let l = 0; l < lines; l++) {
      const base = l * stride;
      for (let pass = 0; pass < 2; pass++) {
        for (let k = 0; k < len + 2 * pad; k++) {
          line[k] = out[base + Math.min(len - 1, Math.max(0, k - pad)) * step]!;
          prefix[k + 1] = prefix[k]! + line[k]!;
        }
        for (let k = 0; k < len; k++) {
          const c = k + pad;
          const inner = prefix[c + r + 1]! - prefix[c - r]!;
          out[base + k * step] = (inner + alpha * (line[c - r - 1]! + line[c + r + 1]!)) * norm;
        }
      }
    }
  };
  run(w, h, 1, w);
  run(h, w, w, 1);
  return out;
}

/**
 * Relative contrast at vein scale of the central palm (a square of half-side `half` around the
 * palm centre): block-average to about 20 px per palm radius (so the cost does not grow with
 * the resolution), smooth at 0.05 r and at 0.2 r, and take the standard deviation of the log of
 * their ratio, 2 cells of border excluded. Gain cancels in the ratio; every size is relative to r.
 */
function veinScaleContrast(frame: GrayImage, g: HandGeometry, half: number): number {
  const { width: w, data } = frame;
  const f = Math.max(1, Math.round(g.radius / 20));
  const x0 = Math.max(0, Math.round(g.cx - half));
  const y0 = Math.max(0, Math.round(g.cy - half));
  const pw = Math.floor((Math.min(w, Math.round(g.cx + half)) - x0) / f);
  const ph = Math.floor((Math.min(frame.height, Math.round(g.cy + half)) - y0) / f);
  if (pw < 8 || ph < 8) return 0;
  const patch = new Float32Array(pw * ph);
  // the blocks' integer sums on the kernel when it runs (the same sums in any order)
  const sums = f > 1 ? blockSumsSimd(frame, x0, y0, f, pw, ph) : null;
  if (sums) {
    for (let i = 0; i < patch.length; i++) patch[i] = sums[i]! / (f * f);
  } else {
    for (let y = 0; y < ph; y++) {
      for (let x = 0; x < pw; x++) {
        let s = 0;
        for (let dy = 0; dy < f; dy++) {
          const row = (y0 + y * f + dy) * w + x0 + x * f;
          for (let dx = 0; dx < f; dx++) s += data[row + dx]!;
        }
        patch[y * pw + x] = s / (f * f);
      }
    }
  }
  const r = g.radius / f;
  // the block average already smooths by about 1/12 cell²
  const fine = smooth(patch, pw, ph, Math.sqrt(Math.max(0.25, (0.05 * r) ** 2 - 1 / 12)));
  const coarse = smooth(patch, pw, ph, 0.2 * r);
  let s = 0;
  let s2 = 0;
  let n = 0;
  for (let y = 2; y < ph - 2; y++) {
    for (let x = 2; x < pw - 2; x++) {
      const i = y * pw + x;
      const v = Math.log(Math.max(0.5, fine[i]!) / Math.max(0.5, coarse[i]!));
      s += v;
      s2 += v * v;
      n++;
    }
  }
  const mean = s / n;
  return Math.sqrt(Math.max(0, s2 / n - mean * mean));
}

/**
 * The autocorrelation sums of `res` (pw × ph, pw > 10) behind the periodicity, in the layout of
 * the kernel's `lagSums` (capture-kernel.ts): [0, 4) row lag 0, horizontal lags 2–5, each over
 * whole rows; 4 + (ly − 1) · 12 + lx + 5 the row lags 1–5 over the interior columns 5 … pw − 6,
 * where all eleven horizontal lags −5…5 fall inside (one pass per row lag with one load of the
 * centre pixel); 64 + (ly − 1) · 12 + lx + 5 the five columns at each end of a row, where some
 * lags fall outside. Every sum runs row by row, column by column, as the kernel's does, so both
 * give the same doubles (docs/palm-pipeline.md, "Speed of the capture path").
 */
export function autocorrelationSumsJs(res: Float64Array, pw: number, ph: number): Float64Array {
  const out = new Float64Array(124);
  for (let lx = 2; lx <= 5; lx++) {
    let s = 0;
    for (let y = 0; y < ph; y++) {
      for (let i = y * pw, end = y * pw + pw - lx; i < end; i++) s += res[i]! * res[i + lx]!;
    }
    out[lx - 2] = s;
  }
  const edge = new Float64Array(11);
  for (let ly = 1; ly <= 5; ly++) {
    edge.fill(0);
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    let s4 = 0;
    let s5 = 0;
    let s6 = 0;
    let s7 = 0;
    let s8 = 0;
    let s9 = 0;
    let s10 = 0;
    for (let y = 0; y + ly < ph; y++) {
      const r0 = y * pw;
      const r1 = (y + ly) * pw;
      for (let x = 5; x < pw - 5; x++) {
        const a = res[r0 + x]!;
        const j = r1 + x;
        s0 += a * res[j - 5]!;
        s1 += a * res[j - 4]!;
        s2 += a * res[j - 3]!;
        s3 += a * res[j - 2]!;
        s4 += a * res[j - 1]!;
        s5 += a * res[j]!;
        s6 += a * res[j + 1]!;
        s7 += a * res[j + 2]!;
        s8 += a * res[j + 3]!;
        s9 += a * res[j + 4]!;
        s10 += a * res[j + 5]!;
      }
      for (let x = 0; x < pw; x = x === 4 ? Math.max(5, pw - 5) : x + 1) {
        const a = res[r0 + x]!;
        for (let lx = -5; lx <= 5; lx++) {
          if (x + lx >= 0 && x + lx < pw) edge[lx + 5] = edge[lx + 5]! + a * res[r1 + x + lx]!;
        }
      }
    }
    out.set([s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10], 4 + (ly - 1) * 12);
    out.set(edge, 64 + (ly - 1) * 12);
  }
  return out;
}

/**
 * Largest normalised autocorrelation at the lags 2–5 px (|lx| ≥ 2 or ly ≥ 2, ly 0–5, lx −5–5),
 * from the sums of `autocorrelationSumsJs` (or the kernel's `lagSums`) and the energy `e0`.
 */
function maxAutocorrelation(sums: Float64Array, e0: number): number {
  let best = 0;
  for (let lx = 2; lx <= 5; lx++) best = Math.max(best, sums[lx - 2]! / (e0 + 1e-6));
  for (let ly = 1; ly <= 5; ly++) {
    for (let lx = -5; lx <= 5; lx++) {
      if (Math.abs(lx) < 2 && ly < 2) continue;
      const i = (ly - 1) * 12 + lx + 5;
      best = Math.max(best, (sums[4 + i]! + sums[64 + i]!) / (e0 + 1e-6));
    }
  }
  return best;
}

/**
 * Over the hand (g.mask) on the work image: the grey-level sum and count, the count at ≥ 250, and
 * sum and count of the pixels whose chamfer distance lies in [edgeLo, edgeHi], or else in
 * [innerLo, innerHi]. Integer sums, so the kernel's (16 pixels a step; a distance, an integer, is
 * in [lo, hi] exactly when it is in [⌈lo⌉, ⌊hi⌋]) equal the loop's.
 */
export function handSums(
  g: HandGeometry,
  edgeLo: number,
  edgeHi: number,
  innerLo: number,
  innerHi: number,
): HandSums {
  const lo = (v: number) => Math.max(0, Math.ceil(v));
  const hi = (v: number) => Math.min(65535, Math.floor(v));
  const band = (a: number, b: number): [number, number] => (lo(a) > hi(b) ? [65535, 0] : [lo(a), hi(b)]);
  const bands = [...band(edgeLo, edgeHi), ...band(innerLo, innerHi)] as const;
  return (
    handSumsSimd(g.work.data, g.mask, g.distance, bands) ?? handSumsJs(g, edgeLo, edgeHi, innerLo, innerHi)
  );
}

/** `handSums` without the WebAssembly kernel (engines without SIMD; the reference tests). */
export function handSumsJs(
  g: HandGeometry,
  edgeLo: number,
  edgeHi: number,
  innerLo: number,
  innerHi: number,
): HandSums {
  let sum = 0;
  let count = 0;
  let saturated = 0;
  let edge = 0;
  let edgeN = 0;
  let inner = 0;
  let innerN = 0;
  const work = g.work.data;
  const mask = g.mask;
  const dist = g.distance;
  for (let i = 0; i < work.length; i++) {
    if (!mask[i]) continue;
    const v = work[i]!;
    sum += v;
    count++;
    if (v >= 250) saturated++;
    const d = dist[i]!;
    if (d >= edgeLo && d <= edgeHi) {
      edge += v;
      edgeN++;
    } else if (d >= innerLo && d <= innerHi) {
      inner += v;
      innerN++;
    }
  }
  return { sum, count, saturated, edge, edgeN, inner, innerN };
}

export function measureFrame(
  frame: GrayImage,
  g: HandGeometry,
): Omit<CaptureMeasures, 'sharpness' | 'anisotropy'> {
  const { width: w, height: h, data } = frame;
  // bands relative to the palm radius (chamfer units are px × 3), so the measure is scale-free;
  // the mask and the distances are those of the image the hand was located on (g.work)
  const rw = g.radius / g.scale;
  const edgeLo = Math.max(3, rw * 0.07);
  const edgeHi = Math.max(edgeLo + 3, rw * 0.21);
  const {
    sum,
    count,
    saturated: sat,
    edge,
    edgeN,
    inner,
    innerN,
  } = handSums(g, edgeLo, edgeHi, rw * 0.84, rw * 1.4);
  // fine residual of the central palm patch, in frame pixels (no resampling, which would blur it);
  // at most 129 px square, so the cost does not grow with the camera's resolution
  const half = Math.max(4, Math.floor(Math.min(g.radius * 0.7, 64)));
  const x0 = Math.max(1, Math.round(g.cx - half));
  const y0 = Math.max(1, Math.round(g.cy - half));
  const x1 = Math.min(w - 2, Math.round(g.cx + half));
  const y1 = Math.min(h - 2, Math.round(g.cy + half));
  const pw = x1 - x0;
  const ph = y1 - y0;
  let periodicity = 0;
  const veinContrast = veinScaleContrast(frame, g, Math.max(4, Math.floor(g.radius * 0.7)));
  if (pw > 12 && ph > 12) {
    // float32 values (Math.fround: the residual's precision) held as doubles, so the
    // autocorrelation's loads need no conversion; its energy summed in the same order as before
    // in the kernel's memory when it runs the interior sums (no copy)
    const res = lagBuffer(pw, ph) ?? new Float64Array(pw * ph);
    let e0 = 0;
    // 3 × 3 box sums from column sums of three rows (integers: the same sums in any order)
    const col = new Int32Array(pw + 2);
    for (let y = 0; y < ph; y++) {
      const i0 = (y + y0) * w + x0 - 1;
      for (let x = 0; x < pw + 2; x++) {
        const i = i0 + x;
        col[x] = data[i - w]! + data[i]! + data[i + w]!;
      }
      for (let x = 0, o = y * pw; x < pw; x++, o++) {
        const s = col[x]! + col[x + 1]! + col[x + 2]!;
        const v = Math.fround(data[i0 + x + 1]! - s / 9);
        res[o] = v;
        e0 += v * v;
      }
    }
    const sums = captureSimdAvailable ? lagSums(pw, ph) : autocorrelationSumsJs(res, pw, ph);
    periodicity = maxAutocorrelation(sums, e0);
  }
  return {
    handMean: count ? sum / count : 0,
    saturated: count ? sat / count : 0,
    relativeRadius: g.radius / Math.min(w, h),
    periodicity,
    veinContrast,
    edgeFalloff: edgeN && innerN ? edge / edgeN / (inner / innerN) : 1,
  };
}
