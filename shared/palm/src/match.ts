import { createProbeMatcherSimd, packedDistanceSimd } from './match-simd.ts';
import { CODE_PLANES, decodeTemplate, GRID, type PalmTemplate, popcount32 } from './template.ts';

/**
 * 1:1 matching of palm codes: masked, normalised Hamming distance, minimised over small
 * translations (coarse-to-fine) so that residual ROI misalignment does not count as difference.
 */
export const ROW_WORDS = 8; // mask, 6 code planes, 1 pad — one cache-friendly block per grid row
export const PACKED_WORDS = GRID * ROW_WORDS;

/**
 * Coarse search only: count of jointly reliable points below which the distance is pulled toward
 * 0.5. The tile stage rescales by the share of the overlap both masks trust instead (`tiledDistance`).
 */
const REFERENCE_OVERLAP = 560;
const MIN_OVERLAP = 160;
/** How far (grid cells) each tile may move beyond the global shift. */
export const TILE_REACH = 2;
/**
 * Smoothness penalty of the tile search: added to the distance per cell of disagreement between
 * neighbouring tiles' shifts (mean over the 24 neighbour edges of |Δdx| + |Δdy|). A genuine pair's
 * tiles follow one smooth deformation; an impostor's tiles each pick their own best shift, so the
 * free search lowers impostor distances. Chosen on real palm crops and frames, see
 * docs/palm-pipeline.md ("Matcher on real palm crops", "Fragile-bit mask"): 0.03 with 80 % of the
 * cells trusted, 0.02 with all of them.
 */
export const TILE_SMOOTHNESS = 0.02;

export interface MatchOptions {
  /** Largest coarse shift in grid cells (each cell is 4 px of a 128 px ROI). */
  range?: number;
}

export function packTemplate(t: PalmTemplate): Uint32Array {
  const out = new Uint32Array(PACKED_WORDS);
  packInto(t, out, 0);
  return out;
}

export function packInto(t: PalmTemplate, out: Uint32Array, offset: number): void {
  for (let r = 0; r < GRID; r++) {
    const o = offset + r * ROW_WORDS;
    out[o] = t.mask[r]!;
    for (let p = 0; p < CODE_PLANES; p++) out[o + 1 + p] = t.code[p * GRID + r]!;
    out[o + 7] = 0;
  }
}

/**
 * The six code planes of a row of `a` against the shifted row of `b`, XORed and masked by `m`:
 * per byte lane (8 columns), how many code bits differ (≤ 48). The popcounts are fused: the 4-bit
 * lane sums of three words each (≤ 12) are added before widening to bytes, which halves the work
 * of six separate popcounts.
 */
function differingBytes(
  a: Uint32Array,
  ia: number,
  b: Uint32Array,
  ib: number,
  left: number,
  right: number,
  m: number,
): number {
  let x = (a[ia + 1]! ^ ((b[ib + 1]! >>> right) << left)) & m;
  let y = (a[ia + 2]! ^ ((b[ib + 2]! >>> right) << left)) & m;
  let z = (a[ia + 3]! ^ ((b[ib + 3]! >>> right) << left)) & m;
  x -= (x >>> 1) & 0x55555555;
  y -= (y >>> 1) & 0x55555555;
  z -= (z >>> 1) & 0x55555555;
  let s1 =
    (x & 0x33333333) +
    ((x >>> 2) & 0x33333333) +
    (y & 0x33333333) +
    ((y >>> 2) & 0x33333333) +
    (z & 0x33333333) +
    ((z >>> 2) & 0x33333333);
  x = (a[ia + 4]! ^ ((b[ib + 4]! >>> right) << left)) & m;
  y = (a[ia + 5]! ^ ((b[ib + 5]! >>> right) << left)) & m;
  z = (a[ia + 6]! ^ ((b[ib + 6]! >>> right) << left)) & m;
  x -= (x >>> 1) & 0x55555555;
  y -= (y >>> 1) & 0x55555555;
  z -= (z >>> 1) & 0x55555555;
  let s2 =
    (x & 0x33333333) +
    ((x >>> 2) & 0x33333333) +
    (y & 0x33333333) +
    ((y >>> 2) & 0x33333333) +
    (z & 0x33333333) +
    ((z >>> 2) & 0x33333333);
  s1 = (s1 & 0x0f0f0f0f) + ((s1 >>> 4) & 0x0f0f0f0f);
  s2 = (s2 & 0x0f0f0f0f) + ((s2 >>> 4) & 0x0f0f0f0f);
  return s1 + s2;
}

/** Distance at one shift, sampling every `rowStep`-th row. Returns NaN when overlap is too small. */
export function shiftedDistance(
  a: Uint32Array,
  ao: number,
  b: Uint32Array,
  bo: number,
  dx: number,
  dy: number,
  rowStep: number,
): number {
  let n = 0;
  let bits = 0;
  const r0 = dy < 0 ? -dy : 0;
  const r1 = dy > 0 ? GRID - dy : GRID;
  const left = dx < 0 ? -dx : 0;
  const right = Math.max(dx, 0);
  for (let r = r0; r < r1; r += rowStep) {
    const ia = ao + r * ROW_WORDS;
    const ib = bo + (r + dy) * ROW_WORDS;
    // bit c of a row is column c: compare a(r, c) with b(r + dy, c + dx)
    const m = a[ia]! & ((b[ib]! >>> right) << left);
    if (m === 0) continue;
    n += popcount32(m);
    bits += Math.imul(differingBytes(a, ia, b, ib, left, right, m), 0x01010101) >>> 24;
  }
  const minOverlap = MIN_OVERLAP / rowStep;
  if (n < minOverlap) return Number.NaN;
  const d = bits / (n * CODE_PLANES);
  // Daugman-style rescaling: a distance over few points is less trustworthy.
  return 0.5 - (0.5 - d) * Math.sqrt(Math.min(1, (n * rowStep) / REFERENCE_OVERLAP));
}

const tileBits = new Float64Array(16);
const tileN = new Float64Array(16);
const bestTileD = new Float64Array(16);
const bestTileBits = new Float64Array(16);
const bestTileN = new Float64Array(16);
const bestTileShift = new Int32Array(16);

/**
 * Mean disagreement of neighbouring tiles' shifts: over the edges between 4-neighbour tiles that
 * both have a valid shift, the mean of |Δdx| + |Δdy| (a shift is coded dx + 8 dy, both offsets
 * from the window corner, 0–4). 0 when no edge has two valid tiles.
 */
export function shiftDisagreement(shift: ArrayLike<number>, valid: ArrayLike<number>): number {
  let pen = 0;
  let edges = 0;
  for (let t = 0; t < 16; t++) {
    if (valid[t] === 0) continue;
    const x = shift[t]! & 7;
    const y = shift[t]! >> 3;
    if ((t & 3) !== 3 && valid[t + 1] !== 0) {
      pen += Math.abs(x - (shift[t + 1]! & 7)) + Math.abs(y - (shift[t + 1]! >> 3));
      edges++;
    }
    if (t < 12 && valid[t + 4] !== 0) {
      pen += Math.abs(x - (shift[t + 4]! & 7)) + Math.abs(y - (shift[t + 4]! >> 3));
      edges++;
    }
  }
  return edges === 0 ? 0 : pen / edges;
}

/**
 * Cells of tile `t` (band t >> 2, byte lane t & 3: 8 rows × 8 columns) whose partner at shift
 * (dx, dy) lies inside the grid: the tile's overlap area, masks aside.
 */
export function tileOverlap(t: number, dx: number, dy: number): number {
  const r0 = (t >> 2) * 8;
  const c0 = (t & 3) * 8;
  const rows = Math.max(0, Math.min(r0 + 8, GRID - dy) - Math.max(r0, -dy));
  const cols = Math.max(0, Math.min(c0 + 8, GRID - dx) - Math.max(c0, -dx));
  return rows * cols;
}

/**
 * Tile-wise alignment over 4 × 4 tiles of 8 × 8 cells: each tile takes its own best shift within
 * ±reach of the global one, absorbing the rotation, scale and skin deformation that one global
 * translation cannot. An 8-column tile is one byte lane of a row word, so the fused bit count
 * yields the four tiles of a row at once (byte-lane sums, widened to 16-bit lanes to accumulate).
 * `smoothness` (default TILE_SMOOTHNESS) is added per cell of mean disagreement between
 * neighbouring tiles' chosen shifts (`shiftDisagreement`): a deformation that is not smooth costs.
 * The distance is rescaled toward 0.5 by √(trusted / area), the share of the tiles' overlap area
 * (`tileOverlap`, at their chosen shifts) that both masks trust: a pair with fewer trusted cells
 * carries less evidence, e.g. a template coded before every cell was kept (MASK_KEEP 0.8 then).
 */
export function tiledDistance(
  a: Uint32Array,
  ao: number,
  b: Uint32Array,
  bo: number,
  gx: number,
  gy: number,
  reach = TILE_REACH,
  smoothness = TILE_SMOOTHNESS,
): number {
  bestTileD.fill(Number.POSITIVE_INFINITY);
  bestTileBits.fill(0);
  bestTileN.fill(0);
  bestTileShift.fill(0);
  for (let dy = gy - reach; dy <= gy + reach; dy++) {
    for (let dx = gx - reach; dx <= gx + reach; dx++) {
      const code = dx - gx + reach + 8 * (dy - gy + reach);
      tileBits.fill(0);
      tileN.fill(0);
      const left = dx < 0 ? -dx : 0;
      const right = Math.max(dx, 0);
      for (let band = 0; band < 4; band++) {
        let evenBits = 0;
        let oddBits = 0;
        let evenN = 0;
        let oddN = 0;
        const lo = Math.max(band * 8, -dy);
        const hi = Math.min(band * 8 + 8, GRID - dy);
        for (let r = lo; r < hi; r++) {
          const ia = ao + r * ROW_WORDS;
          const ib = bo + (r + dy) * ROW_WORDS;
          const m = a[ia]! & ((b[ib]! >>> right) << left);
          if (m === 0) continue;
          let c = m - ((m >>> 1) & 0x55555555);
          c = (c & 0x33333333) + ((c >>> 2) & 0x33333333);
          c = (c + (c >>> 4)) & 0x0f0f0f0f;
          evenN += c & 0x00ff00ff;
          oddN += (c >>> 8) & 0x00ff00ff;
          const v = differingBytes(a, ia, b, ib, left, right, m);
          evenBits += v & 0x00ff00ff;
          oddBits += (v >>> 8) & 0x00ff00ff;
        }
        const t = band * 4;
        tileBits[t] = evenBits & 0xffff;
        tileBits[t + 1] = oddBits & 0xffff;
        tileBits[t + 2] = evenBits >>> 16;
        tileBits[t + 3] = oddBits >>> 16;
        tileN[t] = evenN & 0xffff;
        tileN[t + 1] = oddN & 0xffff;
        tileN[t + 2] = evenN >>> 16;
        tileN[t + 3] = oddN >>> 16;
      }
      for (let t = 0; t < 16; t++) {
        const n = tileN[t]!;
        if (n < 8) continue;
        const d = tileBits[t]! / n;
        if (d < bestTileD[t]!) {
          bestTileD[t] = d;
          bestTileBits[t] = tileBits[t]!;
          bestTileN[t] = n;
          bestTileShift[t] = code;
        }
      }
    }
  }
  let bits = 0;
  let n = 0;
  let area = 0;
  for (let t = 0; t < 16; t++) {
    if (bestTileN[t] === 0) continue;
    bits += bestTileBits[t]!;
    n += bestTileN[t]!;
    const code = bestTileShift[t]!;
    area += tileOverlap(t, gx - reach + (code & 7), gy - reach + (code >> 3));
  }
  if (n < MIN_OVERLAP) return 0.5;
  const d = bits / (n * CODE_PLANES);
  // Daugman-style rescaling by the share of the overlapping cells that both masks trust, the area
  // floored at REFERENCE_OVERLAP: a pair whose trusted tiles cover less than that carries less
  // evidence however fully it trusts them (a template with a few trusted tiles must not match
  // everyone as easily as a whole palm)
  const base = 0.5 - (0.5 - d) * Math.sqrt(Math.min(1, n / Math.max(area, REFERENCE_OVERLAP)));
  if (smoothness === 0) return base;
  return base + smoothness * shiftDisagreement(bestTileShift, bestTileN);
}

/**
 * Alignment search: a coarse global translation (step 2 cells over ±range, half the rows), then
 * tile-wise refinement (each 8 × 8 tile within ±2 cells of it, with the smoothness penalty). Runs on the WebAssembly SIMD kernel
 * (match-kernel.wat) when the engine has it and the range is the default; the result is identical
 * to `packedDistanceJs`, the plain JavaScript reference.
 */
export function packedDistance(a: Uint32Array, ao: number, b: Uint32Array, bo: number, range = 4): number {
  if (
    packedDistanceSimd !== null &&
    range === 4 &&
    ao >= 0 &&
    bo >= 0 &&
    ao + PACKED_WORDS <= a.length &&
    bo + PACKED_WORDS <= b.length
  )
    return packedDistanceSimd(a, ao, b, bo);
  return packedDistanceJs(a, ao, b, bo, range);
}

/**
 * One probe against many candidates (1:N second stage): `match(b, bo)` equals
 * `packedDistance(probe, po, b, bo)` for the probe as it was when the matcher was made. On the SIMD
 * kernel the probe is laid out once instead of once per candidate.
 */
export function probeMatcher(probe: Uint32Array, po = 0): (b: Uint32Array, bo: number) => number {
  const p = probe.slice(po, po + PACKED_WORDS);
  const simd = p.length === PACKED_WORDS ? createProbeMatcherSimd(p, 0) : null;
  if (!simd) return (b, bo) => packedDistance(p, 0, b, bo);
  return (b, bo) =>
    bo >= 0 && bo + PACKED_WORDS <= b.length ? simd.distance(b, bo) : packedDistanceJs(p, 0, b, bo);
}

/**
 * `packedDistance` in plain JavaScript: the reference, and the path without WebAssembly SIMD.
 * `smoothness` other than TILE_SMOOTHNESS is for studies and tests (the kernel has the default).
 */
export function packedDistanceJs(
  a: Uint32Array,
  ao: number,
  b: Uint32Array,
  bo: number,
  range = 4,
  smoothness = TILE_SMOOTHNESS,
): number {
  let bestD = Number.POSITIVE_INFINITY;
  let bx = 0;
  let by = 0;
  for (let dy = -range; dy <= range; dy += 2) {
    for (let dx = -range; dx <= range; dx += 2) {
      const d = shiftedDistance(a, ao, b, bo, dx, dy, 2);
      if (d < bestD) {
        bestD = d;
        bx = dx;
        by = dy;
      }
    }
  }
  return Math.min(0.5, tiledDistance(a, ao, b, bo, bx, by, TILE_REACH, smoothness));
}

/** Exhaustive search over all shifts within ±range (reference for the coarse-to-fine search). */
export function exhaustiveDistance(
  a: Uint32Array,
  ao: number,
  b: Uint32Array,
  bo: number,
  range = 5,
): number {
  let best = 0.5;
  for (let dy = -range; dy <= range; dy++) {
    for (let dx = -range; dx <= range; dx++) {
      const d = shiftedDistance(a, ao, b, bo, dx, dy, 1);
      if (d < best) best = d;
    }
  }
  return best;
}

/** Similarity in [0, 1]: 0 for unrelated palms (distance ≥ 0.5), 1 for identical codes. */
export function distanceToScore(d: number): number {
  return Math.max(0, Math.min(1, 1 - 2 * d));
}

export function compareTemplates(a: Uint8Array, b: Uint8Array, options: MatchOptions = {}): number {
  const pa = packTemplate(decodeTemplate(a));
  const pb = packTemplate(decodeTemplate(b));
  return distanceToScore(packedDistance(pa, 0, pb, 0, options.range ?? 4));
}
