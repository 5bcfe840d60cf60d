import { describe, expect, it } from 'vitest';
import type { GrayImage } from './image-io.ts';
import { normaliseRoi, ROI_SPREAD, roiFromImage, trimUniformBorder } from './roi-input.ts';

/** Deterministic palm-like texture: a few oriented waves plus a slow light gradient. */
function texture(n: number, gain = 1, offset = 0): GrayImage {
  const data = new Uint8Array(n * n);
  for (let y = 0; y < n; y++)
    for (let x = 0; x < n; x++) {
      const u = x / n;
      const v = y / n;
      const t = Math.sin(40 * u + 13 * v) + 0.7 * Math.sin(9 * u - 31 * v) + 0.5 * Math.cos(23 * (u + v));
      data[y * n + x] = Math.max(0, Math.min(255, Math.round(offset + gain * (110 + 30 * t + 20 * u))));
    }
  return { width: n, height: n, data };
}

function spread(roi: Float32Array): number {
  const s = Float32Array.from(roi).sort();
  return s[Math.floor(0.95 * s.length)]! - s[Math.floor(0.05 * s.length)]!;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe('ROI input normalisation', () => {
  it('gives the same ROI for any gain, offset and dynamic range (up to 8-bit rounding)', () => {
    const ref = normaliseRoi(roiFromImage(texture(128)));
    expect(Math.abs(spread(ref) - ROI_SPREAD)).toBeLessThan(4);
    for (const [gain, offset] of [
      [0.4, 60],
      [1.6, -70],
      [0.25, 90],
    ] as const) {
      const roi = normaliseRoi(roiFromImage(texture(128, gain, offset)));
      expect(maxAbsDiff(roi, ref)).toBeLessThan(gain < 0.3 ? 12 : 5);
    }
  });

  it('keeps a flat image finite and does not blow up its noise', () => {
    const flat = { width: 64, height: 64, data: new Uint8Array(64 * 64).fill(200) };
    const roi = normaliseRoi(roiFromImage(flat));
    expect(roi.every((v) => v === 128)).toBe(true);
    const noisy = Uint8Array.from({ length: 64 * 64 }, (_, i) => 200 + (i % 2));
    const r2 = normaliseRoi(roiFromImage({ width: 64, height: 64, data: noisy }));
    expect(r2.every((v) => Number.isFinite(v) && Math.abs(v - 128) <= 16)).toBe(true);
  });

  it('resamples other sizes to the same ROI (64, 150, 192 px)', () => {
    const ref = normaliseRoi(roiFromImage(texture(128)));
    for (const n of [64, 150, 192]) {
      const roi = normaliseRoi(roiFromImage(texture(n)));
      // the texture is defined in relative coordinates, so only resampling error remains
      let err = 0;
      for (let i = 0; i < roi.length; i++) err += Math.abs(roi[i]! - ref[i]!);
      expect(err / roi.length).toBeLessThan(n === 64 ? 4 : 2);
    }
  });

  it('trims uniform black or white padding but never palm texture', () => {
    const img = texture(100);
    expect(trimUniformBorder(img)).toBe(img);
    const w = 120;
    const padded = new Uint8Array(w * 110);
    for (let y = 0; y < 100; y++) padded.set(img.data.subarray(y * 100, (y + 1) * 100), (y + 4) * w + 12);
    const trimmed = trimUniformBorder({ width: w, height: 110, data: padded });
    expect(trimmed).toEqual(img);
    const white = { width: 100, height: 100, data: Uint8Array.from(img.data) };
    white.data.fill(255, 0, 300); // three white rows at the top
    expect(trimUniformBorder(white).height).toBe(97);
    // a saturated palm (white rows at the top and 5 % white inside) is clipping, not padding
    white.data.fill(255, 5000, 5500);
    expect(trimUniformBorder(white)).toBe(white);
  });
});
