import { MATCH_KERNEL_BASE64 } from './match-kernel.wasm.ts';
import { GRID } from './template.ts';
import { compileKernelModule, instantiateKernel } from './wasm/kernel.ts';

/**
 * WebAssembly SIMD kernel for `packedDistance` (see match-kernel.wat). It returns the same value as
 * the JavaScript reference bit for bit; `null` exports mean WebAssembly SIMD is not available here
 * (or the module failed to compile) and callers use the JavaScript path.
 */
const WORDS = GRID * 8; // PACKED_WORDS, kept local to avoid an import cycle with match.ts
const IN_A = 0; // word offsets of the two inputs in kernel memory
const IN_B = WORDS;

interface KernelExports {
  memory: { buffer: ArrayBuffer };
  prepareA(): void;
  distanceB(): number;
  distance(): number;
}

function instantiate(): { exports: KernelExports; mem: Uint32Array } | null {
  const module = compileKernelModule(MATCH_KERNEL_BASE64);
  if (!module) return null;
  try {
    const exports = instantiateKernel<KernelExports>(module);
    return { exports, mem: new Uint32Array(exports.memory.buffer) };
  } catch {
    return null;
  }
}

const kernel = instantiate();

/** Whether the SIMD kernel is in use on this engine. */
export const simdAvailable = kernel !== null;

function copyIn(src: Uint32Array, so: number, dst: number): void {
  const mem = kernel!.mem;
  if (so === 0 && src.length === WORDS) mem.set(src, dst);
  else mem.set(src.subarray(so, so + WORDS), dst);
}

/** The probe matcher whose template is in the kernel's probe slot, if any. */
let activeProbe: object | null = null;

/**
 * `packedDistance(a, ao, b, bo)` with the default range (4) on the SIMD kernel, or `null` when the
 * kernel is unavailable. Both templates must be whole (`PACKED_WORDS` words from the offset).
 */
export const packedDistanceSimd: ((a: Uint32Array, ao: number, b: Uint32Array, bo: number) => number) | null =
  kernel
    ? (a, ao, b, bo) => {
        activeProbe = null; // the probe slot is overwritten
        copyIn(a, ao, IN_A);
        copyIn(b, bo, IN_B);
        return kernel.exports.distance();
      }
    : null;

/**
 * One probe against many candidates: the probe is copied and transposed once, each `distance`
 * call then only loads the candidate. Only one such matcher is active at a time (the kernel memory
 * holds one probe): `distance` re-prepares the probe if another matcher or `packedDistanceSimd`
 * ran in between.
 */
export interface ProbeMatcher {
  distance(b: Uint32Array, bo: number): number;
}

export function createProbeMatcherSimd(probe: Uint32Array, po: number): ProbeMatcher | null {
  if (!kernel) return null;
  const copy = probe.slice(po, po + WORDS);
  if (copy.length !== WORDS) return null;
  const matcher: ProbeMatcher = {
    distance(b, bo) {
      if (activeProbe !== matcher) {
        kernel.mem.set(copy, IN_A);
        kernel.exports.prepareA();
        activeProbe = matcher;
      }
      copyIn(b, bo, IN_B);
      return kernel.exports.distanceB();
    },
  };
  return matcher;
}
