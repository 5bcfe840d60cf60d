import { AppError } from '@palmid/contracts/errors';
import type { GrayImage } from './image-io.ts';
import { ROI_SIZE } from './model-graph.ts';

/**
 * The `--roi` input path: an already-cropped palm ROI image of any size, depth and contrast →
 * ROI_SIZE² floats for the feature graph. Uniform padding is trimmed, the centre square is
 * resampled with area averaging, then gain and offset are normalised (`normaliseRoi`).
 */
export function roiInput(img: GrayImage): Float32Array {
  return normaliseRoi(roiFromImage(trimUniformBorder(img)));
}

/**
 * An already-cropped palm ROI of any size → ROI_SIZE² floats: centre square crop (ROIs are
 * square in every public database; a small aspect mismatch is cropped rather than stretched),
 * then area-averaging resample so that large crops are low-passed rather than aliased.
 */
export function roiFromImage(img: GrayImage): Float32Array {
  if (img.width < 16 || img.height < 16) {
    throw new AppError('INVALID_REQUEST', `ROI image too small (${img.width}×${img.height})`, {
      field: 'image',
      reason: 'too_small',
    });
  }
  const side = Math.min(img.width, img.height);
  const x0 = (img.width - side) / 2;
  const y0 = (img.height - side) / 2;
  return resampleSquare(img, x0, y0, side, ROI_SIZE);
}

/** Area-weighted resample of the square [x0, x0+side)² to n × n (bilinear when upsampling). */
export function resampleSquare(
  img: GrayImage,
  x0: number,
  y0: number,
  side: number,
  n: number,
): Float32Array {
  const out = new Float32Array(n * n);
  const step = side / n;
  if (step <= 1) {
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < n; c++)
        out[r * n + c] = bilinear(img, x0 + (c + 0.5) * step - 0.5, y0 + (r + 0.5) * step - 0.5);
    }
    return out;
  }
  const taps = Math.ceil(step);
  const sub = step / taps;
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      let s = 0;
      for (let j = 0; j < taps; j++) {
        const y = y0 + r * step + (j + 0.5) * sub - 0.5;
        for (let i = 0; i < taps; i++) s += bilinear(img, x0 + c * step + (i + 0.5) * sub - 0.5, y);
      }
      out[r * n + c] = s / (taps * taps);
    }
  }
  return out;
}

export function bilinear(img: GrayImage, x: number, y: number): number {
  const w = img.width;
  const h = img.height;
  const cx = Math.max(0, Math.min(w - 1.001, x));
  const cy = Math.max(0, Math.min(h - 1.001, y));
  const ix = Math.floor(cx);
  const iy = Math.floor(cy);
  const fx = cx - ix;
  const fy = cy - iy;
  const i = iy * w + ix;
  const d = img.data;
  const i2 = ix + 1 < w ? i + 1 : i;
  const i3 = iy + 1 < h ? i + w : i;
  const i4 = iy + 1 < h ? i2 + w : i2;
  return (d[i]! * (1 - fx) + d[i2]! * fx) * (1 - fy) + (d[i3]! * (1 - fx) + d[i4]! * fx) * fy;
}

/** Robust spread (5th–95th percentile, grey levels) that `normaliseRoi` gives every ROI. */
export const ROI_SPREAD = 60;
/** Mid grey level that `normaliseRoi` puts the median at. */
const ROI_MID = 128;

/**
 * Global gain/offset normalisation of a resampled ROI, robust to outliers and borders: the median
 * of the central region goes to 128 and its 5th–95th percentile spread to ROI_SPREAD. The feature
 * graph normalises local contrast against a fixed variance floor (in grey levels²), so without
 * this step the same palm seen with a different gain, offset or dynamic range (a dim NIR sensor,
 * a 12-bit camera, an over-bright scanner) is smoothed to a different degree. Statistics come from
 * the central 3/4 of the ROI, so black padding or rotation corners do not set the gain.
 */
export function normaliseRoi(roi: Float32Array, n = ROI_SIZE, spread = ROI_SPREAD): Float32Array {
  const m0 = Math.floor(n / 8);
  const m1 = n - m0;
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (let r = m0; r < m1; r++)
    for (let c = m0; c < m1; c++) {
      const v = roi[r * n + c]!;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  if (!(hi - lo > 1e-3)) return new Float32Array(roi.length).fill(ROI_MID);
  const bins = 2048;
  const hist = new Uint32Array(bins);
  const k = (bins - 1) / (hi - lo);
  for (let r = m0; r < m1; r++) for (let c = m0; c < m1; c++) hist[Math.floor((roi[r * n + c]! - lo) * k)]!++;
  const total = (m1 - m0) * (m1 - m0);
  const quantile = (q: number): number => {
    let acc = 0;
    for (let b = 0; b < bins; b++) {
      acc += hist[b]!;
      if (acc >= q * total) return lo + (b + 0.5) / k;
    }
    return hi;
  };
  const p5 = quantile(0.05);
  const median = quantile(0.5);
  const p95 = quantile(0.95);
  // capped so that a nearly flat image (no palm texture) is not blown up into pure noise
  const gain = Math.min(spread / Math.max(p95 - p5, 1e-3), 16);
  const out = new Float32Array(roi.length);
  const offset = ROI_MID - median * gain;
  for (let i = 0; i < roi.length; i++) out[i] = roi[i]! * gain + offset;
  return out;
}

/**
 * Drops uniform black or white bands at the image border (padding that some ROI tools add, or a
 * frame), at most a quarter of the side each. A row or column is padding when all its pixels
 * are within 2 levels of one value that is ≤ 16 or ≥ 240; palm skin always carries some texture.
 */
export function trimUniformBorder(img: GrayImage): GrayImage {
  const { width: w, height: h, data } = img;
  const uniform = (start: number, step: number, count: number): boolean => {
    const v0 = data[start]!;
    if (v0 > 16 && v0 < 240) return false;
    for (let i = 1; i < count; i++) if (Math.abs(data[start + i * step]! - v0) > 2) return false;
    return true;
  };
  let top = 0;
  let bottom = h;
  let left = 0;
  let right = w;
  while (top < h / 4 && uniform(top * w, 1, w)) top++;
  while (h - bottom < h / 4 && uniform((bottom - 1) * w, 1, w)) bottom--;
  while (left < w / 4 && uniform(top * w + left, w, bottom - top)) left++;
  while (w - right < w / 4 && uniform(top * w + right - 1, w, bottom - top)) right--;
  if (top === 0 && left === 0 && bottom === h && right === w) return img;
  // Clipping, not padding, when the band's level also covers ≥ 1 % of the inside (a saturated or
  // underexposed palm): trimming it would change the scale of this image only.
  const level = data[top > 0 ? 0 : bottom < h ? (h - 1) * w : left > 0 ? 0 : w - 1]!;
  let same = 0;
  for (let r = top; r < bottom; r++)
    for (let c = left; c < right; c++) if (Math.abs(data[r * w + c]! - level) <= 2) same++;
  if (same >= 0.01 * (bottom - top) * (right - left)) return img;
  const cw = right - left;
  const out = new Uint8Array(cw * (bottom - top));
  for (let r = top; r < bottom; r++) out.set(data.subarray(r * w + left, r * w + right), (r - top) * cw);
  return { width: cw, height: bottom - top, data: out };
}
