import type { HandGeometry } from './hand-geometry.ts';
import type { GrayImage } from './image-io.ts';
import { ROI_SIZE } from './model-graph.ts';

/** ROI side as a multiple of the palm's inscribed radius (≈ the central 80 % of the palm). */
export const ROI_SIDE_PER_RADIUS = 1.5;

/**
 * Rotation- and scale-normalised palm square: fingers up, thumb side right (left hands are
 * mirrored so both hands share one code layout, unless `mirrorLeft` is false), ROI_SIZE² floats.
 */
export function cropPalm(frame: GrayImage, g: HandGeometry, mirrorLeft = true): Float32Array {
  const up = g.roi?.up ?? g.up ?? -Math.PI / 2;
  const ux = Math.cos(up);
  const uy = Math.sin(up);
  const mirror = mirrorLeft && g.hand === 'left' ? -1 : 1;
  const rx = -uy * mirror;
  const ry = ux * mirror;
  // the square placed from the finger valleys, or else around the inscribed circle, a little
  // towards the fingers (the inscribed circle sits low on a palm with a thumb)
  const side = g.roi?.side ?? g.radius * ROI_SIDE_PER_RADIUS;
  const cx = g.roi?.cx ?? g.cx + ux * g.radius * 0.1;
  const cy = g.roi?.cy ?? g.cy + uy * g.radius * 0.1;
  const out = new Float32Array(ROI_SIZE * ROI_SIZE);
  const step = side / ROI_SIZE;
  // supersample 2 × 2 when the palm is larger than the ROI grid (avoids aliasing)
  const taps = step > 1 ? 2 : 1;
  // `bilinear` (roi-input.ts) written out here: the same arithmetic, without a call per tap
  const { width: w, height: h, data: d } = frame;
  const xMax = w - 1.001;
  const yMax = h - 1.001;
  // per sub-column and sub-row products, computed once (the same values as in the sum below)
  const n = ROI_SIZE * taps;
  const urx = new Float64Array(n);
  const ury = new Float64Array(n);
  const vux = new Float64Array(n);
  const vuy = new Float64Array(n);
  for (let c = 0; c < ROI_SIZE; c++) {
    for (let i = 0; i < taps; i++) {
      const u = (c + (i + 0.5) / taps) / ROI_SIZE - 0.5;
      urx[c * taps + i] = u * rx;
      ury[c * taps + i] = u * ry;
      vux[c * taps + i] = u * ux;
      vuy[c * taps + i] = u * uy;
    }
  }
  for (let r = 0; r < ROI_SIZE; r++) {
    for (let c = 0; c < ROI_SIZE; c++) {
      let s = 0;
      for (let j = 0; j < taps; j++) {
        const vx = vux[r * taps + j]!;
        const vy = vuy[r * taps + j]!;
        for (let i = 0; i < taps; i++) {
          const x = cx + side * (urx[c * taps + i]! - vx);
          const y = cy + side * (ury[c * taps + i]! - vy);
          const px = Math.max(0, Math.min(xMax, x));
          const py = Math.max(0, Math.min(yMax, y));
          const ix = Math.floor(px);
          const iy = Math.floor(py);
          const fx = px - ix;
          const fy = py - iy;
          const k = iy * w + ix;
          const k2 = ix + 1 < w ? k + 1 : k;
          const k3 = iy + 1 < h ? k + w : k;
          const k4 = iy + 1 < h ? k2 + w : k2;
          s += (d[k]! * (1 - fx) + d[k2]! * fx) * (1 - fy) + (d[k3]! * (1 - fx) + d[k4]! * fx) * fy;
        }
      }
      out[r * ROI_SIZE + c] = s / (taps * taps);
    }
  }
  return out;
}
