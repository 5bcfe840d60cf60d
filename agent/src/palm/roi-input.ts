import { AppError } from '@palmid/shared/errors.ts';
import type { GrayImage } from './image-io.ts';
import { ROI_SIZE } from './model-graph.ts';

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
