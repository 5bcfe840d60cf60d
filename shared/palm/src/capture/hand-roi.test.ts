import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { describe, expect, it } from 'vitest';
import { seededBytes, seededUniform } from '../../../../test/support/seeded.ts';
import { captureSimdAvailable } from './capture-kernel.ts';
import { type HandGeometry, locateHand } from './hand-geometry.ts';
import { cropPalm, cropPalmJs, ROI_SIDE_PER_RADIUS } from './hand-roi.ts';
import type { GrayImage } from './image-io.ts';
import { ROI_SIZE } from './model-graph.ts';

/**
 * The crop's definition, written independently of hand-roi.ts: the square centred at (cx, cy)
 * with side `side`, "up" at angle `up`, "right" a quarter turn from it (mirrored for a left hand
 * when asked); each output the mean of taps × taps bilinear samples at the sub-pixel centres,
 * the frame mirrored at its edges; the same arithmetic, term by term.
 */
function definition(
  frame: GrayImage,
  sq: { cx: number; cy: number; side: number; up: number },
  mirror: number,
) {
  const ux = Math.cos(sq.up);
  const uy = Math.sin(sq.up);
  const rx = -uy * mirror;
  const ry = ux * mirror;
  const taps = sq.side / ROI_SIZE > 1 ? 2 : 1;
  const { width: w, height: h, data } = frame;
  const mirrorAt = (v: number, max: number) => {
    if (v >= 0 && v <= max) return v;
    const r = v < 0 ? -v : 2 * max - v;
    return Math.max(0, Math.min(r, max));
  };
  const sample = (x: number, y: number) => {
    const px = mirrorAt(x, w - 1.001);
    const py = mirrorAt(y, h - 1.001);
    const ix = Math.floor(px);
    const iy = Math.floor(py);
    const fx = px - ix;
    const fy = py - iy;
    const at = (xx: number, yy: number) => data[Math.min(yy, h - 1) * w + Math.min(xx, w - 1)]!;
    return (
      (at(ix, iy) * (1 - fx) + at(ix + 1, iy) * fx) * (1 - fy) +
      (at(ix, iy + 1) * (1 - fx) + at(ix + 1, iy + 1) * fx) * fy
    );
  };
  const out = new Float32Array(ROI_SIZE * ROI_SIZE);
  for (let r = 0; r < ROI_SIZE; r++) {
    for (let c = 0; c < ROI_SIZE; c++) {
      let s = 0;
      for (let j = 0; j < taps; j++) {
        const v = (r + (j + 0.5) / taps) / ROI_SIZE - 0.5;
        for (let i = 0; i < taps; i++) {
          const u = (c + (i + 0.5) / taps) / ROI_SIZE - 0.5;
          s += sample(sq.cx + sq.side * (u * rx - v * ux), sq.cy + sq.side * (u * ry - v * uy));
        }
      }
      out[r * ROI_SIZE + c] = s / (taps * taps);
    }
  }
  return out;
}

/** A geometry whose ROI square is given (the other fields are not read by the crop). */
function geometry(
  sq: { cx: number; cy: number; side: number; up: number },
  hand: 'left' | 'right',
): HandGeometry {
  return {
    roi: sq,
    hand,
    up: sq.up,
    cx: sq.cx,
    cy: sq.cy,
    radius: sq.side / ROI_SIDE_PER_RADIUS,
  } as HandGeometry;
}

/** Float arrays equal bit for bit (Object.is: −0 and NaN count). */
function sameFloats(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

describe('cropPalm (palm ROI crop)', () => {
  it('gives the same floats on the kernel, in JavaScript and by the definition: any angle, size, overhang', () => {
    expect(captureSimdAvailable).toBe(true); // Node 20+: the kernel path is the one tested here
    const sizes: Array<[number, number]> = [
      [1600, 1200],
      [640, 480],
      [641, 479],
      [40, 33],
    ];
    const next = seededUniform(7);
    let cases = 0;
    for (const [width, height] of sizes) {
      const frame: GrayImage = { width, height, data: seededBytes(width * height, width + height) };
      const short = Math.min(width, height);
      for (let k = 0; k < 14; k++) {
        // angles near the axes and anywhere; sides below and above the grid (1 or 2 × 2 taps);
        // centres inside, near and beyond every edge (mirror padding)
        const up = k < 4 ? (k * Math.PI) / 2 + (next() - 0.5) * 0.2 : (next() - 0.5) * 2 * Math.PI;
        const side = k % 5 === 0 ? ROI_SIZE * (0.5 + next() * 0.45) : short * (0.3 + next() * 0.9);
        const sq = {
          cx: width * (next() * 1.4 - 0.2),
          cy: height * (next() * 1.4 - 0.2),
          side,
          up,
        };
        for (const hand of ['right', 'left'] as const) {
          for (const mirrorLeft of [true, false]) {
            const g = geometry(sq, hand);
            const want = definition(frame, sq, mirrorLeft && hand === 'left' ? -1 : 1);
            expect(sameFloats(cropPalmJs(frame, g, mirrorLeft), want)).toBe(true);
            expect(sameFloats(cropPalm(frame, g, mirrorLeft), want)).toBe(true);
            cases++;
          }
        }
      }
    }
    expect(cases).toBe(4 * 14 * 4);
  });

  it('gives the same floats on the kernel and in JavaScript for located hands (VGA and 1600 × 1200)', async () => {
    for (const [width, height, identity] of [
      [640, 480, 'roi-1'],
      [1600, 1200, 'roi-2'],
    ] as const) {
      const frame = await renderPalm({ identity, hand: 'left', capture: 1, width, height });
      const g = locateHand(frame);
      expect(g.radius).toBeGreaterThan(20);
      const js = cropPalmJs(frame, g);
      expect(sameFloats(cropPalm(frame, g), js)).toBe(true);
      // a crop of a hand, not of nothing: the palm is textured
      const mean = js.reduce((a, b) => a + b, 0) / js.length;
      expect(mean).toBeGreaterThan(20);
    }
  });
});
