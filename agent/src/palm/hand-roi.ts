import type { HandGeometry } from './hand-geometry.ts';
import type { GrayImage } from './image-io.ts';
import { ROI_SIZE } from './model-graph.ts';
import { bilinear } from './roi-input.ts';

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
  for (let r = 0; r < ROI_SIZE; r++) {
    for (let c = 0; c < ROI_SIZE; c++) {
      let s = 0;
      for (let j = 0; j < taps; j++) {
        for (let i = 0; i < taps; i++) {
          const u = (c + (i + 0.5) / taps) / ROI_SIZE - 0.5;
          const v = (r + (j + 0.5) / taps) / ROI_SIZE - 0.5;
          s += bilinear(frame, cx + side * (u * rx - v * ux), cy + side * (u * ry - v * uy));
        }
      }
      out[r * ROI_SIZE + c] = s / (taps * taps);
    }
  }
  return out;
}
