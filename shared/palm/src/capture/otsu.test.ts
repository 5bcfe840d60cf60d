import { describe, expect, it } from 'vitest';
import { seededUniform } from '../../../../test/support/seeded.ts';
import { otsu, otsuOfHistogram } from './hand-geometry.ts';

/** Otsu's threshold by its definition: one histogram of every pixel, counted one by one. */
function plainOtsu(data: Uint8Array): number {
  const hist = new Array<number>(256).fill(0);
  for (const v of data) hist[v]!++;
  return otsuOfHistogram(hist, data.length);
}

describe('otsu', () => {
  it('equals the single-histogram definition on any length, bimodal or uniform, with long runs', () => {
    const rnd = seededUniform(5);
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
