import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compareTemplates,
  distanceToScore,
  exhaustiveDistance,
  packedDistance,
  packTemplate,
  ROW_WORDS,
  shiftedDistance,
  tiledDistance,
} from './match.ts';
import { CODE_PLANES, encodeTemplate, GRID, type PalmTemplate, popcount32 } from './template.ts';

function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
}

function randomTemplate(seed: number): PalmTemplate {
  const r = rng(seed);
  return {
    version: 1,
    hand: 'right',
    quality: 80,
    liveness: 90,
    code: Uint32Array.from({ length: CODE_PLANES * GRID }, () => r()),
    mask: Uint32Array.from({ length: GRID }, () => r() | r()),
    signature: Uint32Array.from({ length: 4 }, () => r()),
  };
}

/** The template content moved by (dx, dy) grid cells. */
function shifted(t: PalmTemplate, dx: number, dy: number): PalmTemplate {
  const move = (w: number) => (dx >= 0 ? w << dx : w >>> -dx) >>> 0;
  const rows = (arr: Uint32Array, plane: number) =>
    Array.from({ length: GRID }, (_, r) => {
      const src = r - dy;
      return src >= 0 && src < GRID ? move(arr[plane * GRID + src]!) : 0;
    });
  const code = new Uint32Array(CODE_PLANES * GRID);
  for (let p = 0; p < CODE_PLANES; p++) code.set(rows(t.code, p), p * GRID);
  return { ...t, code, mask: Uint32Array.from(rows(t.mask, 0)) };
}

function naive(a: Uint32Array, b: Uint32Array, dx: number, dy: number): number {
  let n = 0;
  let bits = 0;
  for (let r = 0; r < GRID; r++) {
    const rb = r + dy;
    if (rb < 0 || rb >= GRID) continue;
    for (let c = 0; c < GRID; c++) {
      const cb = c + dx;
      if (cb < 0 || cb >= GRID) continue;
      if (!((a[r * ROW_WORDS]! >>> c) & 1) || !((b[rb * ROW_WORDS]! >>> cb) & 1)) continue;
      n++;
      for (let p = 1; p <= CODE_PLANES; p++)
        bits += ((a[r * ROW_WORDS + p]! >>> c) ^ (b[rb * ROW_WORDS + p]! >>> cb)) & 1;
    }
  }
  return bits / (n * CODE_PLANES);
}

describe('palm matcher core', () => {
  it('popcount32 counts bits', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (x) => {
        expect(popcount32(x)).toBe(x.toString(2).replaceAll('0', '').length);
      }),
    );
  });

  it('fused bit counting agrees with a per-bit reference at every shift', () => {
    const a = packTemplate(randomTemplate(1));
    const b = packTemplate(randomTemplate(2));
    for (const [dx, dy] of [
      [0, 0],
      [3, -2],
      [-4, 1],
      [1, 4],
    ] as const) {
      const d = shiftedDistance(a, 0, b, 0, dx, dy, 1);
      const ref = naive(a, b, dx, dy);
      // shiftedDistance rescales toward 0.5 when overlap is small; full-overlap masks keep it exact
      expect(Math.abs(d - 0.5)).toBeLessThanOrEqual(Math.abs(ref - 0.5) + 1e-9);
      expect(Math.sign(d - 0.5)).toBe(Math.sign(ref - 0.5) || Math.sign(d - 0.5));
    }
  });

  it('tile-wise counting with no extra reach equals the global count at that shift', () => {
    const a = packTemplate(randomTemplate(3));
    const b = packTemplate(randomTemplate(4));
    for (const [dx, dy] of [
      [0, 0],
      [2, -3],
      [-1, 4],
    ] as const) {
      expect(tiledDistance(a, 0, b, 0, dx, dy, 0)).toBeCloseTo(shiftedDistance(a, 0, b, 0, dx, dy, 1), 12);
      expect(tiledDistance(a, 0, b, 0, dx, dy, 2)).toBeLessThanOrEqual(
        shiftedDistance(a, 0, b, 0, dx, dy, 1) + 1e-12,
      );
    }
  });

  it('finds identical codes under a translation within the search range', () => {
    const t = randomTemplate(7);
    t.mask.fill(0xffffffff);
    // random codes have no spatial correlation, so the coarse stage only sees shifts on its lattice
    for (const [dx, dy] of [
      [0, 0],
      [2, -2],
      [-4, 2],
      [4, 0],
    ] as const) {
      expect(packedDistance(packTemplate(t), 0, packTemplate(shifted(t, dx, dy)), 0)).toBeLessThan(0.05);
    }
    for (const [dx, dy] of [
      [1, -1],
      [-3, 3],
      [5, 0],
    ] as const) {
      expect(exhaustiveDistance(packTemplate(t), 0, packTemplate(shifted(t, dx, dy)), 0)).toBeLessThan(0.05);
    }
  });

  it('scores unrelated codes near zero and identical ones at one', () => {
    const a = encodeTemplate(randomTemplate(11));
    const b = encodeTemplate(randomTemplate(12));
    expect(compareTemplates(a, a)).toBe(1);
    expect(compareTemplates(a, b)).toBeLessThan(0.15);
    expect(distanceToScore(0.5)).toBe(0);
  });
});
