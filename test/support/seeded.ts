/**
 * Seeded pseudo-random numbers for reproducible test data: a 32-bit linear congruential generator
 * (the C standard's constants), the same sequence for a seed on every run and machine.
 */
export function seededUniform(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

/** `n` seeded bytes: the high byte of each step of `seededUniform(seed)`. */
export function seededBytes(n: number, seed: number): Uint8Array {
  const next = seededUniform(seed);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = next() * 256;
  return out;
}
