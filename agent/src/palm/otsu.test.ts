import { describe, expect, it } from 'vitest';
import { otsu } from './hand-geometry.ts';

/** Otsu's threshold by its definition: one histogram, the largest between-class variance. */
function plainOtsu(data: Uint8Array): number {
  const hist = new Array<number>(256).fill(0);
  for (const v of data) hist[v]!++;
  let sum = 0;
  for (let i = 0; i < 256; i++) sum += i * hist[i]!;
  let sumB = 0;
  let wB = 0;
  let best = 0;
  let threshold = 128;
  for (let t = 0; t < 256; t++) {
    wB += hist[t]!;
    if (wB === 0) continue;
    const wF = data.length - wB;
    if (wF === 0) break;
    sumB += t * hist[t]!;
    const mB = sumB / wB;
    const mF = (sum - sumB) / wF;
    const between = wB * wF * (mB - mF) * (mB - mF);
    if (between > best) {
      best = between;
      threshold = t;
    }
  }
  return threshold;
}

describe('otsu', () => {
  it('equals the single-histogram definition on any length, bimodal or uniform, with long runs', () => {
    let seed = 5;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    for (const n of [1, 2, 3, 5, 7, 64, 1001, 76_800, 76_803]) {
      // a dark background in runs and a bright hand, or uniform noise
      const bimodal = new Uint8Array(n);
      for (let i = 0; i < n; i++)
        bimodal[i] = (i >> 7) % 3 === 0 ? 150 + Math.floor(rnd() * 60) : Math.floor(rnd() * 4);
      const uniform = Uint8Array.from({ length: n }, () => Math.floor(rnd() * 256));
      for (const data of [bimodal, uniform]) expect(otsu(data)).toBe(plainOtsu(data));
    }
    const split = new Uint8Array(1000).fill(10, 0, 600).fill(200, 600);
    expect(otsu(split)).toBe(10);
  });
});
