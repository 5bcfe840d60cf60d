import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { describe, expect, it } from 'vitest';
import { seededBytes } from '../../../../test/support/seeded.ts';
import { aboveSimd, blockAverageSimd, captureSimdAvailable, foregroundSimd } from './capture-kernel.ts';
import type { GrayImage } from './image-io.ts';
import {
  blockAverage,
  blockAverageJs,
  blockAverageReference,
  foreground,
  foregroundJs,
  maskAbove,
  maskAboveJs,
  negative,
} from './work-scale.ts';

/** The plain definition, written independently: mean of each f × f block, rounded half up. */
function expected(frame: GrayImage, f: number): Uint8Array {
  const w = Math.floor(frame.width / f);
  const h = Math.floor(frame.height / f);
  const out = new Uint8Array(w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let s = 0;
      for (let dy = 0; dy < f; dy++)
        for (let dx = 0; dx < f; dx++) s += frame.data[(y * f + dy) * frame.width + x * f + dx]!;
      // half up, in integers: floor((2s + f²) / 2f²)
      out[y * w + x] = Math.floor((2 * s + f * f) / (2 * f * f));
    }
  }
  return out;
}

describe('blockAverage (work scale)', () => {
  it('equals the plain block average for every factor, size and alignment', () => {
    const bytes = seededBytes(1604 * 1203 + 3, 11);
    const sizes: Array<[number, number]> = [
      [640, 480],
      [1600, 1200],
      [1603, 1201],
      [644, 483],
      [36, 33],
    ];
    for (const [width, height] of sizes) {
      for (const offset of [0, 1, 4]) {
        const frame: GrayImage = { width, height, data: bytes.subarray(offset, offset + width * height) };
        for (const f of [2, 3, 4, 5, 7, 16, 17]) {
          const want = Buffer.from(expected(frame, f));
          // blockAverage (the kernel above f = 2), the JavaScript word paths, the plain loop
          for (const got of [
            blockAverage(frame, f),
            blockAverageJs(frame, f),
            blockAverageReference(frame, f),
          ]) {
            expect(got.width).toBe(Math.floor(width / f));
            expect(got.height).toBe(Math.floor(height / f));
            expect(Buffer.from(got.data).equals(want)).toBe(true);
          }
          const kernel = blockAverageSimd(
            frame.data,
            width,
            f,
            Math.floor(width / f),
            Math.floor(height / f),
          );
          // the kernel takes f ≤ 16 (16-bit column sums are far from full there)
          if (f <= 16) expect(Buffer.from(kernel!).equals(want)).toBe(true);
          else expect(kernel).toBeNull();
        }
      }
    }
  });

  it('is exact at the extremes (all 255: lane sums at their largest) and on half-way sums', () => {
    for (const f of [2, 5, 16]) {
      const white: GrayImage = { width: 64 * f, height: 4 * f, data: new Uint8Array(256 * f * f).fill(255) };
      expect(blockAverage(white, f).data.every((v) => v === 255)).toBe(true);
      expect(blockAverageJs(white, f).data.every((v) => v === 255)).toBe(true);
    }
    // 2 × 2 blocks summing to 4k + 2 round up
    const data = new Uint8Array(8 * 2);
    data.set([0, 1, 4, 5, 9, 9, 250, 255], 0);
    data.set([1, 0, 5, 4, 10, 10, 255, 255], 8);
    for (const average of [blockAverage, blockAverageJs])
      expect(Array.from(average({ width: 8, height: 2, data }, 2).data)).toEqual([1, 5, 10, 254]);
  });

  it('equals the plain block average on rendered hands (grey-dark VGA and a large colour-like frame)', async () => {
    expect(captureSimdAvailable).toBe(true); // Node 20+: the kernel path is the one tested here
    const vga = await renderPalm({ identity: 'ws-1', hand: 'right', capture: 1, width: 640, height: 480 });
    expect(Buffer.from(blockAverage(vga, 2).data).equals(Buffer.from(expected(vga, 2)))).toBe(true);
    const big = await renderPalm({ identity: 'ws-2', hand: 'left', capture: 2, width: 1600, height: 1200 });
    expect(Buffer.from(blockAverage(big, 5).data).equals(Buffer.from(expected(big, 5)))).toBe(true);
    expect(Buffer.from(blockAverageJs(big, 5).data).equals(Buffer.from(expected(big, 5)))).toBe(true);
  });

  it('returns the frame itself at factor 1, and the negative byte by byte', () => {
    const frame: GrayImage = { width: 40, height: 30, data: seededBytes(1200, 3) };
    expect(blockAverage(frame, 1)).toBe(frame);
    const neg = negative(frame);
    for (let i = 0; i < 1200; i++) expect(neg.data[i]).toBe(255 - frame.data[i]!);
  });
});

describe('foreground (the work image thresholded)', () => {
  it('gives the mask, the start distances and the count of the plain comparison, on the kernel and in JavaScript', () => {
    expect(captureSimdAvailable).toBe(true);
    for (const n of [0, 1, 15, 16, 17, 333, 76_800, 76_815]) {
      const data = seededBytes(n, n + 1);
      for (const t of [0, 20, 128, 200, 254, 255]) {
        const mask = data.map((v) => (v > t ? 1 : 0));
        const distance = Uint16Array.from(data, (v) => (v > t ? 65000 : 0));
        const count = mask.reduce((a, b) => a + b, 0);
        const kernel = foregroundSimd(data, t, 65000);
        for (const got of [kernel!, foreground(data, t, 65000), foregroundJs(data, t, 65000)]) {
          expect(got.count).toBe(count);
          expect(Buffer.from(got.mask).equals(Buffer.from(mask))).toBe(true);
          const bytes = Buffer.from(got.distance.buffer, got.distance.byteOffset, got.distance.byteLength);
          expect(bytes.equals(Buffer.from(distance.buffer))).toBe(true);
        }
      }
    }
    // a threshold the byte comparison cannot take: the JavaScript loop answers
    expect(foregroundSimd(new Uint8Array(4), 20.5, 65000)).toBeNull();
    expect(foreground(Uint8Array.of(20, 21, 22), 20.5, 7)).toEqual({
      mask: Uint8Array.of(0, 1, 1),
      distance: Uint16Array.of(0, 7, 7),
      count: 2,
    });
  });
});

describe("maskAbove (the finger scans' tighter levels)", () => {
  it('equals the plain comparison for fractional, integer and out-of-range levels, on the kernel and in JavaScript', () => {
    for (const n of [0, 1, 15, 17, 76_800, 76_801]) {
      const data = seededBytes(n, 2 * n + 3);
      for (const level of [-3, -0.5, 0, 0.5, 20, 57.25, 57.75, 128, 254.5, 255, 255.5, 300]) {
        const want = Buffer.from(data.map((v) => (v > level ? 1 : 0)));
        expect(Buffer.from(maskAbove(data, level)).equals(want)).toBe(true);
        expect(Buffer.from(maskAboveJs(data, level)).equals(want)).toBe(true);
        const t = Math.floor(level);
        if (t >= 0 && t <= 255) expect(Buffer.from(aboveSimd(data, t)!).equals(want)).toBe(true);
      }
    }
  });
});
