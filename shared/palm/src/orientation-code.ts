import { GRID } from './template.ts';

/**
 * The template's code-plane bit encoding (docs/palm-pipeline.md, "Template"): at each grid cell and
 * scale the winning orientation (one of 6) is written as a 3-bit code over three code planes, chosen
 * so that the Hamming distance between two codes is the circular distance between the orientations.
 * The agent's coder (shared/palm/src/capture/coding.ts) writes it; the server's first search stage
 * (shared/palm/src/gallery/stage1.ts) reads it back with `ORIENTATION_OF_CODE`;
 * test/contract/template-encoding.test.ts checks that the two agree.
 */
export const ORIENTATIONS = 6;

/** Orientation → 3-bit code. */
export const ANGULAR_CODE = [0b000, 0b001, 0b011, 0b111, 0b110, 0b100] as const;

/** 3-bit code → orientation; −1 for the two patterns no orientation uses. */
export const ORIENTATION_OF_CODE: readonly number[] = Array.from({ length: 8 }, (_, code) =>
  (ANGULAR_CODE as readonly number[]).indexOf(code),
);

/** The 3-bit code of cell (row, col) at `scale`: bit b comes from code plane `scale * 3 + b`. */
export function cellCode(code: Uint32Array, scale: number, row: number, col: number): number {
  let out = 0;
  for (let b = 0; b < 3; b++) out |= ((code[(scale * 3 + b) * GRID + row]! >>> col) & 1) << b;
  return out;
}
