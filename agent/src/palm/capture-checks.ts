import type { HandGeometry } from './hand-geometry.ts';
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

export function measureFrame(
  frame: GrayImage,
  g: HandGeometry,
): Omit<CaptureMeasures, 'sharpness' | 'anisotropy'> {
  const { width: w, height: h, data } = frame;
  let sum = 0;
  let count = 0;
  let sat = 0;
  let edge = 0;
  let edgeN = 0;
  let inner = 0;
  let innerN = 0;
  // bands relative to the palm radius (chamfer units are px × 3), so the measure is scale-free
  const edgeLo = Math.max(3, g.radius * 0.07);
  const edgeHi = Math.max(edgeLo + 3, g.radius * 0.21);
  const innerLo = g.radius * 0.84;
  const innerHi = g.radius * 1.4;
  for (let i = 0; i < data.length; i++) {
    if (!g.mask[i]) continue;
    const v = data[i]!;
    sum += v;
    count++;
    if (v >= 250) sat++;
    const d = g.distance[i]!;
    if (d >= edgeLo && d <= edgeHi) {
      edge += v;
      edgeN++;
    } else if (d >= innerLo && d <= innerHi) {
      inner += v;
      innerN++;
    }
  }
  // fine residual of the central palm patch, in frame pixels (no resampling, which would blur it)
  const half = Math.max(4, Math.floor(g.radius * 0.7));
  const x0 = Math.max(1, Math.round(g.cx - half));
  const y0 = Math.max(1, Math.round(g.cy - half));
  const x1 = Math.min(w - 2, Math.round(g.cx + half));
  const y1 = Math.min(h - 2, Math.round(g.cy + half));
  const pw = x1 - x0;
  const ph = y1 - y0;
  let periodicity = 0;
  if (pw > 12 && ph > 12) {
    const res = new Float32Array(pw * ph);
    for (let y = 0; y < ph; y++) {
      for (let x = 0; x < pw; x++) {
        const i = (y + y0) * w + (x + x0);
        let s = 0;
        for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) s += data[i + dy * w + dx]!;
        res[y * pw + x] = data[i]! - s / 9;
      }
    }
    let e0 = 0;
    for (const v of res) e0 += v * v;
    for (let ly = 0; ly <= 5; ly++) {
      for (let lx = ly === 0 ? 2 : -5; lx <= 5; lx++) {
        if (Math.abs(lx) < 2 && ly < 2) continue;
        let s = 0;
        for (let y = 0; y + ly < ph; y++) {
          for (let x = Math.max(0, -lx); x < pw && x + lx < pw; x++)
            s += res[y * pw + x]! * res[(y + ly) * pw + x + lx]!;
        }
        periodicity = Math.max(periodicity, s / (e0 + 1e-6));
      }
    }
  }
  return {
    handMean: count ? sum / count : 0,
    saturated: count ? sat / count : 0,
    relativeRadius: g.radius / Math.min(w, h),
    periodicity,
    edgeFalloff: edgeN && innerN ? edge / edgeN / (inner / innerN) : 1,
  };
}
