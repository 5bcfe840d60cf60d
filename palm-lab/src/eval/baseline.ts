import { signatureOf } from '@palmid/palm/capture/coding';
import { gaborKernel, ORIENTATIONS } from '@palmid/palm/capture/gabor';
import type { GrayImage } from '@palmid/palm/capture/image-io';
import { ROI_SIZE } from '@palmid/palm/capture/model-graph';
import { roiFromImage } from '@palmid/palm/capture/roi-input';
import { shiftedDistance } from '@palmid/palm/match';
import { encodeTemplate, GRID } from '@palmid/palm/template';

/**
 * The classic competitive code (Kong & Zhang, ICPR 2004) as the reference to beat: raw 128 × 128
 * ROI, one scale of 6 real Gabor filters (σ = 5.62 px, 35 × 35), winner-take-all on the most
 * negative response, sampled every 4 px, angular Hamming distance, no normalisation, no mask.
 */
const SIGMA = 5.6179;
const SIZE = 35;
const kernels = Array.from({ length: ORIENTATIONS }, (_, o) =>
  gaborKernel(SIGMA, (o * Math.PI) / ORIENTATIONS, SIZE),
);
const ANGULAR_CODE = [0b000, 0b001, 0b011, 0b111, 0b110, 0b100] as const;

export function baselineTemplate(image: GrayImage): Uint8Array {
  const roi = roiFromImage(image);
  const code = new Uint32Array(6 * GRID);
  const winners = new Uint8Array(GRID * GRID);
  const half = (SIZE - 1) / 2;
  for (let gy = 0; gy < GRID; gy++) {
    for (let gx = 0; gx < GRID; gx++) {
      const cy = gy * 4 + 2;
      const cx = gx * 4 + 2;
      let best = Number.POSITIVE_INFINITY;
      let arg = 0;
      for (let o = 0; o < ORIENTATIONS; o++) {
        const k = kernels[o]!;
        let s = 0;
        for (let y = 0; y < SIZE; y++) {
          const iy = Math.max(0, Math.min(ROI_SIZE - 1, cy + y - half));
          for (let x = 0; x < SIZE; x++) {
            const ix = Math.max(0, Math.min(ROI_SIZE - 1, cx + x - half));
            s += k[y * SIZE + x]! * roi[iy * ROI_SIZE + ix]!;
          }
        }
        if (s < best) {
          best = s;
          arg = o;
        }
      }
      winners[gy * GRID + gx] = arg;
      const bits = ANGULAR_CODE[arg]!;
      for (let b = 0; b < 3; b++) {
        if ((bits >> b) & 1) {
          code[b * GRID + gy] = code[b * GRID + gy]! | (1 << gx);
          code[(b + 3) * GRID + gy] = code[(b + 3) * GRID + gy]! | (1 << gx);
        }
      }
    }
  }
  const mask = new Uint32Array(GRID).fill(0xffffffff);
  return encodeTemplate({
    version: 1,
    hand: 'unknown',
    quality: 100,
    liveness: 100,
    code,
    mask,
    signature: signatureOf(winners, mask),
  });
}

/** The baseline's matcher: the minimum over a global translation search of ±4 cells. */
export function baselineDistance(a: Uint32Array, ao: number, b: Uint32Array, bo: number): number {
  let best = 1;
  for (let dy = -4; dy <= 4; dy++)
    for (let dx = -4; dx <= 4; dx++) {
      const d = shiftedDistance(a, ao, b, bo, dx, dy, 1);
      if (d < best) best = d;
    }
  return best;
}
