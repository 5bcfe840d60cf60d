import { readFileSync } from 'node:fs';
import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { describe, expect, it } from 'vitest';
import { seededBytes, seededUniform } from '../../../../test/support/seeded.ts';
import { compileKernel, kernelModuleSource, MODULE_PATH } from '../../scripts/build-capture-kernel.ts';
import { autocorrelationSumsJs, handSums, handSumsJs, measureFrame } from './capture-checks.ts';
import { blockSumsSimd, captureSimdAvailable, lagBuffer, lagSums } from './capture-kernel.ts';
import { type HandGeometry, locateHand } from './hand-geometry.ts';
import type { GrayImage } from './image-io.ts';

/**
 * The frame measures by their plain definitions (docs/palm-pipeline.md, "Speed of the capture
 * path"): the fast loops of measureFrame must give the same numbers.
 */
function reference(frame: GrayImage, g: HandGeometry) {
  const { width: w, height: h, data } = frame;
  const rw = g.radius / g.scale;
  const edgeLo = Math.max(3, rw * 0.07);
  const edgeHi = Math.max(edgeLo + 3, rw * 0.21);
  const innerLo = rw * 0.84;
  const innerHi = rw * 1.4;
  const hand: number[] = [];
  const edge: number[] = [];
  const inner: number[] = [];
  for (let i = 0; i < g.work.data.length; i++) {
    if (!g.mask[i]) continue;
    const v = g.work.data[i]!;
    const d = g.distance[i]!;
    hand.push(v);
    if (d >= edgeLo && d <= edgeHi) edge.push(v);
    else if (d >= innerLo && d <= innerHi) inner.push(v);
  }
  const mean = (a: number[]) => a.reduce((s, v) => s + v, 0) / a.length;
  // periodicity: the residual (pixel − its 3 × 3 mean, float32) of the central patch, and its
  // normalised autocorrelation at every lag with |lx| ≥ 2 or ly ≥ 2 (ly 0–5, lx −5–5)
  const half = Math.max(4, Math.floor(Math.min(g.radius * 0.7, 64)));
  const x0 = Math.max(1, Math.round(g.cx - half));
  const y0 = Math.max(1, Math.round(g.cy - half));
  const pw = Math.min(w - 2, Math.round(g.cx + half)) - x0;
  const ph = Math.min(h - 2, Math.round(g.cy + half)) - y0;
  const res = new Float32Array(pw * ph);
  for (let y = 0; y < ph; y++) {
    for (let x = 0; x < pw; x++) {
      let s = 0;
      for (let dy = -1; dy <= 1; dy++)
        for (let dx = -1; dx <= 1; dx++) s += data[(y0 + y + dy) * w + x0 + x + dx]!;
      res[y * pw + x] = data[(y0 + y) * w + x0 + x]! - s / 9;
    }
  }
  let e0 = 0;
  for (const v of res) e0 += v * v;
  let periodicity = 0;
  for (let ly = 0; ly <= 5; ly++) {
    for (let lx = -5; lx <= 5; lx++) {
      if (Math.abs(lx) < 2 && ly < 2) continue;
      if (ly === 0 && lx < 0) continue;
      let s = 0;
      for (let y = 0; y + ly < ph; y++) {
        for (let x = Math.max(0, -lx); x < pw && x + lx < pw; x++)
          s += res[y * pw + x]! * res[(y + ly) * pw + x + lx]!;
      }
      periodicity = Math.max(periodicity, s / (e0 + 1e-6));
    }
  }
  return {
    handMean: mean(hand),
    saturated: hand.filter((v) => v >= 250).length / hand.length,
    edgeFalloff: mean(edge) / mean(inner),
    periodicity,
  };
}

function noisy(frame: GrayImage, seed: number): GrayImage {
  const data = seededBytes(frame.data.length, seed);
  for (let i = 0; i < data.length; i++)
    data[i] = Math.max(0, Math.min(255, frame.data[i]! + (data[i]! % 41) - 20));
  return { width: frame.width, height: frame.height, data };
}

describe('measureFrame against the plain definitions', () => {
  it('gives the same hand means, saturation, edge falloff and periodicity', async () => {
    const frames: GrayImage[] = [];
    for (const [i, size] of [
      [1, { width: 320, height: 240 }],
      [2, { width: 640, height: 480 }],
      [3, { width: 643, height: 481 }],
    ] as const) {
      const f = await renderPalm({
        identity: `cc-${i}`,
        hand: i % 2 ? 'left' : 'right',
        capture: i,
        ...size,
      });
      frames.push(f, noisy(f, i));
    }
    frames.push(await renderPalm({ identity: 'cc-4', hand: 'right', capture: 4, attack: 'print' }));
    let periodic = 0;
    for (const frame of frames) {
      const g = locateHand(frame);
      expect(g.radius).toBeGreaterThan(10);
      const got = measureFrame(frame, g);
      const want = reference(frame, g);
      expect(got.handMean).toBe(want.handMean);
      expect(got.saturated).toBe(want.saturated);
      expect(got.edgeFalloff).toBe(want.edgeFalloff);
      // the fast loops sum in another order than the plain one: equal to rounding
      expect(Math.abs(got.periodicity - want.periodicity)).toBeLessThan(
        1e-12 * Math.max(1, want.periodicity),
      );
      if (want.periodicity > 0.05) periodic++;
    }
    // not all trivially zero
    expect(periodic).toBeGreaterThan(0);
  }, 60_000);
});

describe('capture kernel (WebAssembly SIMD) lag sums', () => {
  it('gives the same doubles as the JavaScript loops, bit for bit', () => {
    expect(captureSimdAvailable).toBe(true);
    const rnd = seededUniform(9);
    for (const [pw, ph] of [
      [11, 6],
      [13, 13],
      [128, 128],
      [129, 97],
      [57, 129],
    ] as const) {
      for (const kind of ['residual', 'any'] as const) {
        const res = new Float64Array(pw * ph);
        for (let i = 0; i < res.length; i++) {
          // residual-like: float32 values of k/9; or any double over a wide range
          res[i] =
            kind === 'residual'
              ? Math.fround(Math.floor(rnd() * 4081 - 2040) / 9)
              : (rnd() - 0.5) * 10 ** (rnd() * 8);
        }
        const want = autocorrelationSumsJs(res, pw, ph);
        const buf = lagBuffer(pw, ph)!;
        buf.set(res);
        const got = lagSums(pw, ph);
        expect(got.length).toBe(want.length);
        for (let i = 0; i < want.length; i++) {
          // the unused lane of each row lag's interior and edge block is not compared
          if (i >= 4 && (i - 4) % 12 === 11) continue;
          expect(Object.is(got[i], want[i])).toBe(true);
        }
      }
    }
  });

  it('sums f × f blocks of any window exactly (the vein-contrast patch)', () => {
    const width = 1603;
    const height = 1201;
    const data = seededBytes(width * height, 21);
    data.fill(255, 0, width * 257); // blocks of 255: at f = 257 the 16-bit column sums are full
    for (const [x0, y0, f, w, h] of [
      [0, 0, 2, 10, 7],
      [3, 1, 13, 28, 30],
      [517, 211, 5, 33, 40],
      [1, 0, 20, 80, 2],
      [0, 0, 257, 6, 1],
      [1603 - 257 * 6, 1201 - 257 * 4, 257, 6, 4],
      [1590, 1190, 3, 4, 3],
    ] as const) {
      const got = Array.from(blockSumsSimd({ width, data }, x0, y0, f, w, h)!);
      const want: number[] = [];
      for (let y = 0; y < h; y++) {
        for (let x = 0; x < w; x++) {
          let s = 0;
          for (let dy = 0; dy < f; dy++)
            for (let dx = 0; dx < f; dx++) s += data[(y0 + y * f + dy) * width + x0 + x * f + dx]!;
          want.push(s);
        }
      }
      expect(got).toEqual(want);
    }
    expect(blockSumsSimd({ width, data }, 0, 0, 258, 1, 1)).toBeNull();
  });

  it('is built from capture-kernel.wat (the committed module is not stale)', async () => {
    expect(readFileSync(MODULE_PATH, 'utf8')).toBe(kernelModuleSource(await compileKernel()));
  });
});

describe("handSums (the hand measures' sums)", () => {
  it('equals the plain loop on the kernel for any mask, distances and bands (fractional, empty, out of range)', () => {
    const rnd = seededUniform(9);
    for (const n of [1, 15, 16, 33, 76_800, 76_801]) {
      const work = Uint8Array.from({ length: n }, () =>
        rnd() < 0.1 ? 250 + Math.floor(rnd() * 6) : Math.floor(rnd() * 256),
      );
      const mask = Uint8Array.from({ length: n }, () => (rnd() < 0.6 ? 1 : 0));
      const distance = Uint16Array.from({ length: n }, () =>
        rnd() < 0.05 ? 65000 : Math.floor(rnd() * 400),
      );
      const g = { work: { width: n, height: 1, data: work }, mask, distance } as unknown as HandGeometry;
      for (const [eLo, eHi, iLo, iHi] of [
        [3, 9, 40, 70],
        [3.5, 9.5, 40.2, 69.9],
        [10, 5, 0, 65535],
        [-2, 4, 65000, 70000],
        [3, 300, 100, 200],
        [Number.NaN, 9, 40, 70],
      ] as const) {
        const want = handSumsJs(g, eLo, eHi, iLo, iHi);
        expect(handSums(g, eLo, eHi, iLo, iHi)).toEqual(want);
        // the plain definition
        let sum = 0;
        let count = 0;
        let sat = 0;
        for (let i = 0; i < n; i++) {
          if (!mask[i]) continue;
          sum += work[i]!;
          count++;
          if (work[i]! >= 250) sat++;
        }
        expect([want.sum, want.count, want.saturated]).toEqual([sum, count, sat]);
      }
    }
  });
});
