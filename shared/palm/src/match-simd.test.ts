import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileKernel, kernelModuleSource, MODULE_PATH } from '../scripts/build-match-kernel.ts';
import {
  PACKED_WORDS,
  packedDistance,
  packedDistanceJs,
  packTemplate,
  probeMatcher,
  ROW_WORDS,
} from './match.ts';
import { createProbeMatcherSimd, packedDistanceSimd, simdAvailable } from './match-simd.ts';
import { decodeTemplate, GRID } from './template.ts';

const word = fc.integer({ min: 0, max: 0xffffffff });

/** A mask row: dense, sparse (AND of several random words), one bit, empty or full. */
const maskWord = fc.oneof(
  word,
  fc.tuple(word, word).map(([x, y]) => (x & y) >>> 0),
  fc.tuple(word, word, word, word).map(([x, y, z, w]) => (x & y & z & w) >>> 0),
  fc.integer({ min: 0, max: 31 }).map((b) => (1 << b) >>> 0),
  fc.constantFrom(0, 0xffffffff, 0x0000ffff, 0xff0000ff),
);

/** How the template's mask is built: per-row random kinds, all full, all empty, or a band of rows. */
const mask = fc.oneof(
  fc.array(maskWord, { minLength: GRID, maxLength: GRID }),
  fc.constant(Array.from({ length: GRID }, () => 0xffffffff)),
  fc.constant(Array.from({ length: GRID }, () => 0)),
  fc
    .tuple(fc.integer({ min: 0, max: GRID - 1 }), fc.integer({ min: 1, max: GRID }), word)
    .map(([from, len, w]) => Array.from({ length: GRID }, (_, r) => (r >= from && r < from + len ? w : 0))),
);

/** A packed template (pad words random too: both paths must ignore them). */
const packed = fc
  .tuple(fc.array(word, { minLength: PACKED_WORDS, maxLength: PACKED_WORDS }), mask)
  .map(([words, m]) => {
    const out = Uint32Array.from(words);
    for (let r = 0; r < GRID; r++) out[r * ROW_WORDS] = m[r]!;
    return out;
  });

/** `a` moved by (dx, dy) cells with a few flipped bits: a genuine-like pair with low distances and ties. */
function moved(a: Uint32Array, dx: number, dy: number, flips: number[]): Uint32Array {
  const out = new Uint32Array(PACKED_WORDS);
  for (let r = 0; r < GRID; r++) {
    const src = r - dy;
    if (src < 0 || src >= GRID) continue;
    for (let w = 0; w < ROW_WORDS; w++) {
      const v = a[src * ROW_WORDS + w]!;
      out[r * ROW_WORDS + w] = dx >= 0 ? v << dx : v >>> -dx;
    }
  }
  for (const f of flips) out[f % PACKED_WORDS]! ^= 1 << ((f >>> 8) % 32);
  return out;
}

const pair = fc.oneof(
  fc.tuple(packed, packed),
  fc
    .tuple(
      packed,
      fc.integer({ min: -7, max: 7 }),
      fc.integer({ min: -7, max: 7 }),
      fc.array(fc.integer({ min: 0, max: 1 << 16 }), { maxLength: 400 }),
    )
    .map(([a, dx, dy, flips]) => [a, moved(a, dx, dy, flips)] as const),
  packed.map((a) => [a, a] as const),
);

describe('WebAssembly SIMD matcher kernel', () => {
  it('is available on this engine (so the comparisons below are not JS against JS)', () => {
    expect(simdAvailable).toBe(true);
    expect(packedDistanceSimd).not.toBeNull();
  });

  it('returns exactly the JavaScript reference distance on random and genuine-like pairs', () => {
    fc.assert(
      fc.property(pair, ([a, b]) => {
        expect(packedDistanceSimd!(a, 0, b, 0)).toBe(packedDistanceJs(a, 0, b, 0));
        expect(packedDistanceSimd!(b, 0, a, 0)).toBe(packedDistanceJs(b, 0, a, 0));
      }),
      { numRuns: 600 },
    );
  });

  it('reads templates at offsets inside larger arrays, and packedDistance dispatches to it', () => {
    fc.assert(
      fc.property(pair, fc.nat(3), fc.nat(3), ([a, b], i, j) => {
        const store = new Uint32Array(5 * PACKED_WORDS).map((_, k) => Math.imul(k, 2654435761) >>> 0);
        store.set(a, i * PACKED_WORDS);
        const other = new Uint32Array(4 * PACKED_WORDS + 3).fill(0xdeadbeef);
        other.set(b, j * PACKED_WORDS + 3);
        const ref = packedDistanceJs(a, 0, b, 0);
        expect(packedDistanceSimd!(store, i * PACKED_WORDS, other, j * PACKED_WORDS + 3)).toBe(ref);
        expect(packedDistance(store, i * PACKED_WORDS, other, j * PACKED_WORDS + 3)).toBe(ref);
      }),
      { numRuns: 100 },
    );
  });

  it('one-probe matchers agree with the reference when interleaved with each other and 1:1 calls', () => {
    fc.assert(
      fc.property(fc.array(packed, { minLength: 3, maxLength: 6 }), (ts) => {
        const m0 = createProbeMatcherSimd(ts[0]!, 0)!;
        const m1 = createProbeMatcherSimd(ts[1]!, 0)!;
        for (const t of ts) {
          expect(m0.distance(t, 0)).toBe(packedDistanceJs(ts[0]!, 0, t, 0));
          expect(m1.distance(t, 0)).toBe(packedDistanceJs(ts[1]!, 0, t, 0));
          expect(packedDistanceSimd!(t, 0, ts[2]!, 0)).toBe(packedDistanceJs(t, 0, ts[2]!, 0));
          expect(m0.distance(t, 0)).toBe(packedDistanceJs(ts[0]!, 0, t, 0));
        }
      }),
      { numRuns: 40 },
    );
  });

  it('probeMatcher (1:N stage 2) returns the reference distance for every candidate of a flat store', () => {
    fc.assert(
      fc.property(packed, fc.array(packed, { minLength: 1, maxLength: 5 }), (probe, cands) => {
        const store = new Uint32Array(cands.length * PACKED_WORDS);
        for (const [i, c] of cands.entries()) store.set(c, i * PACKED_WORDS);
        const refs = cands.map((c) => packedDistanceJs(probe, 0, c, 0));
        const match = probeMatcher(probe, 0);
        probe.fill(0); // the matcher keeps the probe as it was when made
        for (const [i, ref] of refs.entries()) {
          expect(match(store, i * PACKED_WORDS)).toBe(ref);
          expect(packedDistanceSimd!(store, i * PACKED_WORDS, probe, 0)).toBe(
            packedDistanceJs(store, i * PACKED_WORDS, probe, 0),
          );
          expect(match(store, i * PACKED_WORDS)).toBe(ref);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('falls back to the reference for a non-default range or a short array', () => {
    const a = packTemplate({
      version: 1,
      hand: 'right',
      quality: 90,
      liveness: 90,
      code: new Uint32Array(6 * GRID).map((_, i) => Math.imul(i + 1, 2654435761) >>> 0),
      mask: new Uint32Array(GRID).fill(0xffffffff),
      signature: new Uint32Array(4),
    });
    const b = a.map((w, i) => (i % 8 === 0 ? w : w ^ Math.imul(i, 40503)));
    expect(packedDistance(a, 0, b, 0, 2)).toBe(packedDistanceJs(a, 0, b, 0, 2));
    expect(packedDistance(a, 0, b.subarray(0, PACKED_WORDS - 8), 0)).toBe(
      packedDistanceJs(a, 0, b.subarray(0, PACKED_WORDS - 8), 0),
    );
  });

  it('returns exactly the reference distance on templates made by the extractor', async () => {
    const { renderRoi } = await import('@palmid/firmware-sim/synth/roi');
    const { extractRoiTemplate } = await import('./capture/roi-template.ts');
    const ts: Uint32Array[] = [];
    for (let i = 0; i < 12; i++)
      for (const session of [1, 2] as const) {
        const img = renderRoi({ identity: `simd-${i}`, style: 'contactless', session, sample: 0 });
        ts.push(packTemplate(decodeTemplate(await extractRoiTemplate(img))));
      }
    let genuineBelowHalf = 0;
    for (const [i, a] of ts.entries())
      for (const [j, b] of ts.entries()) {
        const d = packedDistanceSimd!(a, 0, b, 0);
        expect(d).toBe(packedDistanceJs(a, 0, b, 0));
        if (i !== j && i >> 1 === j >> 1 && d < 0.4) genuineBelowHalf++;
      }
    // the pairs are meaningful: most genuine pairs align to a low distance
    expect(genuineBelowHalf).toBeGreaterThan(12);
  }, 60_000);

  it('the committed binary is what the .wat compiles to', async () => {
    expect(readFileSync(MODULE_PATH, 'utf8')).toBe(kernelModuleSource(await compileKernel()));
  });
});
