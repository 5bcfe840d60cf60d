import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compareTemplates,
  distanceToScore,
  exhaustiveDistance,
  packedDistance,
  packedDistanceJs,
  packTemplate,
  ROW_WORDS,
  shiftDisagreement,
  shiftedDistance,
  TILE_SMOOTHNESS,
  tiledDistance,
  tileOverlap,
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
    // full masks: both rescalings (by overlap count, by trusted share) then leave the distance as is
    const full = Uint32Array.from({ length: GRID }, () => 0xffffffff);
    const a = packTemplate({ ...randomTemplate(3), mask: full });
    const b = packTemplate({ ...randomTemplate(4), mask: full });
    for (const [dx, dy] of [
      [0, 0],
      [2, -3],
      [-1, 4],
    ] as const) {
      expect(tiledDistance(a, 0, b, 0, dx, dy, 0)).toBeCloseTo(shiftedDistance(a, 0, b, 0, dx, dy, 1), 12);
      // without the smoothness penalty the tile search never does worse than the global shift
      expect(tiledDistance(a, 0, b, 0, dx, dy, 2, 0)).toBeLessThanOrEqual(
        shiftedDistance(a, 0, b, 0, dx, dy, 1) + 1e-12,
      );
    }
  });

  it('measures the disagreement of neighbouring tile shifts over valid edges only', () => {
    const code = (dx: number, dy: number) => dx + 8 * dy;
    const valid = new Array<number>(16).fill(1);
    expect(shiftDisagreement(new Array<number>(16).fill(code(2, 2)), valid)).toBe(0);
    // tile 5 (row 1, column 1) moved by (2, 1): its 4 edges each differ by 3, of 24 edges
    const one = new Array<number>(16).fill(code(2, 2));
    one[5] = code(4, 3);
    expect(shiftDisagreement(one, valid)).toBeCloseTo((4 * 3) / 24, 12);
    // a corner tile without a valid shift drops its 2 edges
    const noCorner = [...valid];
    noCorner[0] = 0;
    const field = new Array<number>(16).fill(code(2, 2));
    field[0] = code(0, 0);
    expect(shiftDisagreement(field, noCorner)).toBe(0);
    expect(shiftDisagreement(field, valid)).toBeCloseTo((2 * 4) / 24, 12);
    expect(shiftDisagreement(field, new Array<number>(16).fill(0))).toBe(0);
  });

  it('adds the smoothness penalty to unrelated codes but not to a smoothly moved copy', () => {
    let impostorGain = 0;
    for (let k = 0; k < 12; k++) {
      const a = packTemplate(randomTemplate(100 + k));
      const b = packTemplate(randomTemplate(200 + k));
      const free = tiledDistance(a, 0, b, 0, 0, 0, 2, 0);
      const smooth = tiledDistance(a, 0, b, 0, 0, 0, 2);
      // every tile of an unrelated pair picks its own best shift: the field is rough
      expect(smooth).toBeGreaterThan(free);
      impostorGain += smooth - free;
    }
    expect(impostorGain / 12).toBeGreaterThan(TILE_SMOOTHNESS * 0.8);
    // one translation moves every tile alike: no penalty
    const t = randomTemplate(7);
    t.mask.fill(0xffffffff);
    const a = packTemplate(t);
    const b = packTemplate(shifted(t, 1, -1));
    expect(tiledDistance(a, 0, b, 0, 0, 0, 2)).toBe(tiledDistance(a, 0, b, 0, 0, 0, 2, 0));
    expect(tiledDistance(a, 0, b, 0, 0, 0, 2)).toBeLessThan(0.05);
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

  it('rescales the tile distance towards 0.5 by the share of the overlap that both masks trust', () => {
    const t = randomTemplate(5);
    const trusted = t.mask.reduce((s, w) => s + popcount32(w), 0);
    const a = packTemplate(t);
    // identical codes: no differing bit, so the distance is 0.5 − 0.5 √(trusted / overlap area)
    expect(tiledDistance(a, 0, a, 0, 0, 0, 0, 0)).toBeCloseTo(
      0.5 - 0.5 * Math.sqrt(trusted / (GRID * GRID)),
      12,
    );
    // at a shift the area is that of the overlapping cells only: a full mask moved by (3, −2) and
    // compared at that shift rescales by 1 (distance 0; with the whole grid as the area it would not)
    const fullT = { ...t, mask: Uint32Array.from({ length: GRID }, () => 0xffffffff) };
    const full = packTemplate(fullT);
    expect(tiledDistance(full, 0, packTemplate(shifted(fullT, 3, -2)), 0, 3, -2, 0, 0)).toBe(0);
    expect(tiledDistance(full, 0, full, 0, 3, -2, 0, 0)).toBeGreaterThan(0.3);
    expect(tiledDistance(full, 0, full, 0, 0, 0, 2, 0)).toBe(0);
    // a few trusted tiles carry little evidence: the area is floored at 560 cells (3 tiles: 192)
    const few = packTemplate({
      ...t,
      mask: Uint32Array.from({ length: GRID }, (_, r) => (r < 8 ? 0xffffff : 0)),
    });
    expect(tiledDistance(few, 0, few, 0, 0, 0, 0, 0)).toBeCloseTo(0.5 - 0.5 * Math.sqrt(192 / 560), 12);
    expect(packedDistance(few, 0, few, 0)).toBe(packedDistanceJs(few, 0, few, 0));
    expect(tileOverlap(0, 3, -2)).toBe(6 * 8);
    expect(tileOverlap(15, 3, -2)).toBe(8 * 5);
    expect(tileOverlap(5, 3, -2)).toBe(64);
  });

  it('scores unrelated codes near zero and identical ones at one', () => {
    const full = Uint32Array.from({ length: GRID }, () => 0xffffffff);
    const a = encodeTemplate({ ...randomTemplate(11), mask: full });
    const b = encodeTemplate(randomTemplate(12));
    expect(compareTemplates(a, a)).toBe(1);
    // a template that trusts fewer cells carries less evidence: its self-match scores below one
    const partial = encodeTemplate(randomTemplate(13));
    expect(compareTemplates(partial, partial)).toBeLessThan(1);
    expect(compareTemplates(partial, partial)).toBeGreaterThan(0.8);
    expect(compareTemplates(a, b)).toBeLessThan(0.15);
    expect(distanceToScore(0.5)).toBe(0);
  });
});
