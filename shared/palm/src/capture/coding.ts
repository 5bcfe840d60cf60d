import { CODE_PLANES, GRID, SIGNATURE_WORDS, type TemplateCoding } from '../template.ts';
import { CODING_SCALES, ORIENTATIONS } from './gabor.ts';

/** 3-bit codes of the 6 orientations whose Hamming distance is the circular angular distance. */
const ANGULAR_CODE = [0b000, 0b001, 0b011, 0b111, 0b110, 0b100] as const;
/**
 * Share of grid points kept as reliable (the rest are masked as fragile). 1: every cell is kept and
 * the mask marks only the cells whose filters read outside the frame (`unusable`). Masking the
 * 20 % of cells with the smallest winner margin (0.8, before) threw away more evidence than noise
 * on real and synthetic palms; see docs/palm-pipeline.md ("Fragile-bit mask").
 */
export const MASK_KEEP = 1.0;

export interface PalmCode {
  code: Uint32Array;
  mask: Uint32Array;
  signature: Uint32Array;
}

/**
 * Multi-scale competitive code: at each grid point and scale, the orientation with the most
 * negative even-Gabor response (dark lines) wins; reliability is the winner's margin over the
 * runner-up, relative to the response energy, so fragile points (flat skin, crossings) are masked.
 * `responses` is SCALES × ORIENTATIONS planes of GRID² floats, of which `coding` codes two
 * (gabor.ts `CODING_SCALES`), the second giving the signature. `unusable` (GRID² flags, optional)
 * marks cells whose filters read outside the frame (an ROI square that overhangs it, hand-roi.ts
 * `roiOutsideCells`): they are never reliable, and the `keep` share is taken of the other cells.
 */
export function encodeResponses(
  responses: Float32Array,
  offset = 0,
  keep = MASK_KEEP,
  unusable?: Uint8Array,
  coding: TemplateCoding = 'wide',
): PalmCode {
  const cells = GRID * GRID;
  const code = new Uint32Array(CODE_PLANES * GRID);
  const mask = new Uint32Array(GRID);
  const scales = CODING_SCALES[coding];
  const winners = new Uint8Array(scales.length * cells);
  const margin = new Float32Array(cells);
  for (let s = 0; s < scales.length; s++) {
    const plane = scales[s]!;
    for (let i = 0; i < cells; i++) {
      let best = Number.POSITIVE_INFINITY;
      let second = Number.POSITIVE_INFINITY;
      let arg = 0;
      let energy = 0;
      for (let o = 0; o < ORIENTATIONS; o++) {
        const v = responses[offset + (plane * ORIENTATIONS + o) * cells + i]!;
        energy += Math.abs(v);
        if (v < best) {
          second = best;
          best = v;
          arg = o;
        } else if (v < second) second = v;
      }
      winners[s * cells + i] = arg;
      margin[i] = margin[i]! + (second - best) / (energy / ORIENTATIONS + 1e-3);
      const bits = ANGULAR_CODE[arg]!;
      const r = i >> 5;
      const bit = 1 << (i & 31);
      for (let b = 0; b < 3; b++)
        if ((bits >> b) & 1) code[(s * 3 + b) * GRID + r] = code[(s * 3 + b) * GRID + r]! | bit;
    }
  }
  const usable = unusable ? margin.filter((_, i) => !unusable[i]) : margin;
  const sorted = Float32Array.from(usable).sort();
  const n = sorted.length;
  const cut = n > 0 ? sorted[Math.min(n - 1, Math.floor((1 - keep) * n))]! : Number.POSITIVE_INFINITY;
  for (let i = 0; i < cells; i++)
    if (margin[i]! >= cut && !unusable?.[i]) mask[i >> 5] = mask[i >> 5]! | (1 << (i & 31));
  return { code, mask, signature: signatureOf(winners.subarray(cells), mask) };
}

/**
 * 128-bit coarse signature for the 1:N first stage: per 8 × 8 block (4 × 4 blocks), which of the
 * 6 orientations are over-represented among the reliable winners of the coarse scale. Block
 * histograms barely change under the few-cell shifts that the exact matcher searches over.
 */
export function signatureOf(winners: Uint8Array, mask: Uint32Array): Uint32Array {
  const sig = new Uint32Array(SIGNATURE_WORDS);
  const hist = new Float32Array(ORIENTATIONS);
  let bit = 0;
  for (let by = 0; by < 4; by++) {
    for (let bx = 0; bx < 4; bx++) {
      hist.fill(0);
      let n = 0;
      for (let y = by * 8; y < by * 8 + 8; y++) {
        for (let x = bx * 8; x < bx * 8 + 8; x++) {
          if (((mask[y]! >>> x) & 1) === 0) continue;
          hist[winners[y * GRID + x]!] = hist[winners[y * GRID + x]!]! + 1;
          n++;
        }
      }
      for (let o = 0; o < ORIENTATIONS; o++, bit++) {
        if (n > 0 && hist[o]! > n / ORIENTATIONS) sig[bit >> 5] = sig[bit >> 5]! | (1 << (bit & 31));
      }
      // two extra bits per block: the block's dominant orientation pair, for 128 bits in all
      let arg = 0;
      for (let o = 1; o < ORIENTATIONS; o++) if (hist[o]! > hist[arg]!) arg = o;
      const pair = [0, 0, 1, 1, 2, 2][arg]!;
      for (let b = 0; b < 2; b++, bit++)
        if ((pair >> b) & 1) sig[bit >> 5] = sig[bit >> 5]! | (1 << (bit & 31));
    }
  }
  return sig;
}
