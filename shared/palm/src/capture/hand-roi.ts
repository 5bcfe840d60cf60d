import { CROP_SIDE, cropSimd } from './capture-kernel.ts';
import type { HandGeometry } from './geometry.ts';
import type { GrayImage } from './image-io.ts';
import { FEATURE_GRID, ROI_SIZE } from './model-graph.ts';

/**
 * ROI side as a multiple of the palm's inscribed radius (≈ the central 80 % of the palm): the square
 * of a hand whose valleys were not found, and the radius term of every valley square's side
 * (`radiusWeight`) — docs/lab/synthetic.md, "Measured numbers" (the circle ROI the valley squares replaced).
 */
export const ROI_SIDE_PER_RADIUS = 1.5;
/** Without valleys, the square's centre is moved this × r towards the fingers from the inscribed circle's (which sits low on a palm with a thumb): not tuned on data. */
const CENTRE_TOWARDS_FINGERS = 0.1;

/**
 * How near (ROI pixels of ROI_SIZE) the frame edge may come to a template cell before the cell is
 * masked: the Gabor envelope and the contrast normaliser read about this far (docs/palm-pipeline.md,
 * "Capture path on real hands").
 */
export const OUTSIDE_REACH = 8;

/** The ROI square in frame pixels: centre, side, the "up" unit vector and the "right" one. */
function roiSquare(g: HandGeometry, mirrorLeft: boolean) {
  const up = g.roi?.up ?? g.up ?? -Math.PI / 2;
  const ux = Math.cos(up);
  const uy = Math.sin(up);
  const mirror = mirrorLeft && g.hand === 'left' ? -1 : 1;
  // the square placed from the finger valleys, or else around the inscribed circle, a little
  // towards the fingers (the inscribed circle sits low on a palm with a thumb)
  return {
    side: g.roi?.side ?? g.radius * ROI_SIDE_PER_RADIUS,
    cx: g.roi?.cx ?? g.cx + ux * g.radius * CENTRE_TOWARDS_FINGERS,
    cy: g.roi?.cy ?? g.cy + uy * g.radius * CENTRE_TOWARDS_FINGERS,
    ux,
    uy,
    rx: -uy * mirror,
    ry: ux * mirror,
  };
}

/** A coordinate outside [0, max] reflected back into it (mirror padding), then clamped. */
function reflect(v: number, max: number): number {
  const r = v < 0 ? -v : v > max ? 2 * max - v : v;
  return Math.max(0, Math.min(r, max));
}

/**
 * The frame rows a crop's taps read (rows iy and iy + 1 of each, mirror padding included), for a
 * square centred at row `cy` reaching `reach` rows up and down; a row of margin on either side.
 */
function tapRows(h: number, cy: number, reach: number): { y0: number; y1: number } {
  const yMax = h - 1.001;
  const lo = cy - reach - 1;
  const hi = cy + reach + 1;
  // taps outside [0, yMax] are mirrored back: above the top to at most −lo, below the bottom to
  // at least 2 yMax − hi
  let top = Math.max(0, lo);
  let bottom = Math.min(yMax, hi);
  if (hi > yMax) top = Math.min(top, Math.max(0, 2 * yMax - hi));
  if (lo < 0) bottom = Math.max(bottom, Math.min(yMax, -lo));
  return { y0: Math.max(0, Math.floor(top) - 1), y1: Math.min(h - 1, Math.floor(bottom) + 2) };
}

/**
 * Rotation- and scale-normalised palm square: fingers up, thumb side right (left hands are
 * mirrored so both hands share one code layout, unless `mirrorLeft` is false), ROI_SIZE² floats.
 * Where the square overhangs the frame (real cameras cut the palm), the frame is mirrored at its
 * edge so the filters see palm-like texture there; those cells are masked in the template
 * (`roiOutsideCells`).
 */
export function cropPalm(frame: GrayImage, g: HandGeometry, mirrorLeft = true): Float32Array {
  return crop(frame, g, mirrorLeft, true);
}

/** `cropPalm` without the WebAssembly kernel (engines without SIMD; the reference tests). */
export function cropPalmJs(frame: GrayImage, g: HandGeometry, mirrorLeft = true): Float32Array {
  return crop(frame, g, mirrorLeft, false);
}

function crop(frame: GrayImage, g: HandGeometry, mirrorLeft: boolean, simd: boolean): Float32Array {
  const { side, cx, cy, ux, uy, rx, ry } = roiSquare(g, mirrorLeft);
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
  // the inner loop runs along the frame's rows (ROI columns when "right" is nearer the x axis,
  // else ROI rows): the taps of neighbouring outputs then share cache lines; each output's sum is
  // the same whichever order the outputs are made in
  const colsInner = Math.abs(rx) >= Math.abs(ry);
  // the kernel (two taps a vector, the same floats) when the palm is supersampled 2 × 2
  if (simd && taps === 2 && ROI_SIZE === CROP_SIDE && [cx, cy, side, ux, uy].every(Number.isFinite)) {
    const rows = tapRows(h, cy, side * 0.5 * (Math.abs(ry) + Math.abs(uy)));
    if (cropSimd(frame, rows.y0, rows.y1, [urx, ury, vux, vuy], colsInner, { cx, cy, side }, out)) return out;
  }
  for (let a = 0; a < ROI_SIZE; a++) {
    for (let b = 0; b < ROI_SIZE; b++) {
      const r = colsInner ? a : b;
      const c = colsInner ? b : a;
      let s = 0;
      for (let j = 0; j < taps; j++) {
        const vx = vux[r * taps + j]!;
        const vy = vuy[r * taps + j]!;
        for (let i = 0; i < taps; i++) {
          const x = cx + side * (urx[c * taps + i]! - vx);
          const y = cy + side * (ury[c * taps + i]! - vy);
          const px = x >= 0 && x <= xMax ? x : reflect(x, xMax);
          const py = y >= 0 && y <= yMax ? y : reflect(y, yMax);
          // px, py ≥ 0, so truncation is Math.floor (which cost more than the rest of the tap)
          const ix = px | 0;
          const iy = py | 0;
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

/**
 * Template cells (FEATURE_GRID², row-major like the code) whose filters would read outside the
 * frame: 1 where the frame edge is nearer the cell's centre than `reach` ROI pixels (of ROI_SIZE),
 * else 0. Null when the whole square, with that reach, lies inside the frame.
 */
export function roiOutsideCells(
  frame: { width: number; height: number },
  g: HandGeometry,
  mirrorLeft = true,
  reach = OUTSIDE_REACH,
): Uint8Array | null {
  const { side, cx, cy, ux, uy, rx, ry } = roiSquare(g, mirrorLeft);
  const out = new Uint8Array(FEATURE_GRID * FEATURE_GRID);
  const cell = ROI_SIZE / FEATURE_GRID;
  const margin = (reach * side) / ROI_SIZE;
  const xMax = frame.width - 1 - margin;
  const yMax = frame.height - 1 - margin;
  let any = false;
  for (let r = 0; r < FEATURE_GRID; r++) {
    // a cell's filters are centred at ROI coordinate cell × r + 1 (model-graph.ts: the 2 × 2
    // average, then stride 2 over the 64 px image)
    const v = (cell * r + 1) / ROI_SIZE - 0.5;
    for (let c = 0; c < FEATURE_GRID; c++) {
      const u = (cell * c + 1) / ROI_SIZE - 0.5;
      const x = cx + side * (u * rx - v * ux);
      const y = cy + side * (u * ry - v * uy);
      if (x < margin || y < margin || x > xMax || y > yMax) {
        out[r * FEATURE_GRID + c] = 1;
        any = true;
      }
    }
  }
  return any ? out : null;
}
