import { seededRandom } from '../rng.ts';

/** Deterministic PRNG seeded from strings, so every palm and capture is reproducible. */
export type Rng = () => number;

export function hashString(text: string): number {
  // xmur3: small, well-mixed 32-bit string hash.
  let h = 1779033703 ^ text.length;
  for (let i = 0; i < text.length; i++) {
    h = Math.imul(h ^ text.charCodeAt(i), 3432918353);
    h = (h << 13) | (h >>> 19);
  }
  h = Math.imul(h ^ (h >>> 16), 2246822507);
  h = Math.imul(h ^ (h >>> 13), 3266489909);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The simulator's one generator (mulberry32, ../rng.ts) seeded by the hash of a string. */
export function createRng(seed: string): Rng {
  return seededRandom(hashString(seed));
}

export function uniform(rng: Rng, lo: number, hi: number): number {
  return lo + (hi - lo) * rng();
}

/** Standard normal via Box–Muller. */
export function gaussian(rng: Rng): number {
  const u = Math.max(rng(), 1e-12);
  const v = rng();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}
