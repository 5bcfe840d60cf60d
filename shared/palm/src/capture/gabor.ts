import type { TemplateCoding } from '../template.ts';

/**
 * The filter bank of the template extractor: even (real) Gabor filters in the form used by the
 * competitive code (Kong & Zhang 2004), zero-mean so that uniform illumination gives no response.
 */
export const ORIENTATIONS = 6;

export interface GaborScale {
  /** Envelope σ in pixels of the 64 × 64 working image. */
  sigma: number;
}

/**
 * The feature model's scales (σ in px of the 64 px working image): creases, principal lines / veins,
 * and fine creases. A template codes two of them, by its coding (`CODING_SCALES`); the focus
 * measure (stages/quality.ts) reads the first two.
 */
export const SCALES: readonly GaborScale[] = [{ sigma: 2.8 }, { sigma: 5.0 }, { sigma: 2.2 }];

/**
 * The two scales (indices into SCALES) each template coding codes, the second giving the 1:N
 * signature. `wide` (σ 2.8 and 5.0: creases and principal lines or veins) is the original code and
 * the NIR profiles'; `fine` (σ 2.2 and 2.8: creases only) is the visible-light print profiles': on
 * the development sets the principal-line scale made strangers' palms alike (the impostor tail of a
 * 63-person set fitted at dof 222 with it, 719 without), and a million-palm bar is set by that tail
 * (docs/palm-pipeline.md, "Template codings").
 */
export const CODING_SCALES = { wide: [0, 1], fine: [2, 0] } as const satisfies Record<
  TemplateCoding,
  readonly [number, number]
>;
export const KERNEL_SIZE = 31;

const DELTA = 1.5; // half-amplitude bandwidth in octaves
const KAPPA = Math.sqrt(2 * Math.log(2)) * ((2 ** DELTA + 1) / (2 ** DELTA - 1));

export function gaborKernel(sigma: number, theta: number, size = KERNEL_SIZE): Float32Array {
  const omega = KAPPA / sigma;
  const half = (size - 1) / 2;
  const k = new Float32Array(size * size);
  const c = Math.cos(theta);
  const s = Math.sin(theta);
  let sum = 0;
  let env = 0;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const u = (x - half) * c + (y - half) * s;
      const v = -(x - half) * s + (y - half) * c;
      const g = Math.exp((-(omega * omega) / (8 * KAPPA * KAPPA)) * (4 * u * u + v * v));
      const val = g * Math.cos(omega * u);
      k[y * size + x] = val;
      sum += val;
      env += g;
    }
  }
  // remove the DC part in proportion to the envelope (exactly zero mean)
  let norm = 0;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const u = (x - half) * c + (y - half) * s;
      const v = -(x - half) * s + (y - half) * c;
      const g = Math.exp((-(omega * omega) / (8 * KAPPA * KAPPA)) * (4 * u * u + v * v));
      const i = y * size + x;
      k[i] = k[i]! - (sum / env) * g;
      norm += k[i]! * k[i]!;
    }
  }
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < k.length; i++) k[i] = k[i]! * scale;
  return k;
}

/** All kernels, scale-major: index = scale * ORIENTATIONS + orientation. */
export function filterBank(scales: readonly GaborScale[] = SCALES, size = KERNEL_SIZE): Float32Array[] {
  const out: Float32Array[] = [];
  for (const sc of scales) {
    for (let o = 0; o < ORIENTATIONS; o++)
      out.push(gaborKernel(sc.sigma, (o * Math.PI) / ORIENTATIONS, size));
  }
  return out;
}
