import { ORIENTATION_OF_CODE, ORIENTATIONS } from '../orientation-code.ts';
import { CODE_PLANES, GRID, type PalmTemplate, popcount32 } from '../template.ts';
import { compileKernelModule, instantiateKernel } from '../wasm/kernel.ts';
import { STAGE1_KERNEL_BASE64 } from './stage1-kernel.wasm.ts';

/**
 * First stage of the 1:N search: a 768-bit descriptor per palm, derived on the server from the
 * template's code planes (no format change), compared by Hamming distance.
 *
 * For each of the two scales and each 8 × 8-cell block (4 × 4 blocks), the share of the block's
 * reliable cells won by each of the 6 orientations, thermometer-coded against 4 cuts
 * (1/24, 1/10, 1/6, 1/4): the Hamming distance between two thermometer codes is the L1 distance
 * between the quantised histograms. Block histograms tolerate the few-cell shifts that the exact
 * matcher searches over; the template's own 128-bit signature (one cut, coarse scale only) ranks
 * genuine mates far worse against real impostor palms (docs/palm-pipeline.md, Matching).
 */
export const DESCRIPTOR_BYTES = 96;
export const DESCRIPTOR_WORDS = DESCRIPTOR_BYTES / 4;
/** Largest possible distance (every bit differs). */
export const MAX_DESCRIPTOR_DISTANCE = DESCRIPTOR_BYTES * 8;
const CUTS = [1 / 24, 1 / 10, 1 / 6, 1 / 4] as const;
const SCALES = CODE_PLANES / 3;

const counts = new Uint16Array(SCALES * 16 * ORIENTATIONS);
const reliable = new Uint16Array(SCALES * 16);

/** Writes the descriptor of `t` into `out` at word offset `o`. */
export function stage1Descriptor(t: PalmTemplate, out: Uint32Array, o: number): void {
  counts.fill(0);
  reliable.fill(0);
  for (let s = 0; s < SCALES; s++) {
    for (let r = 0; r < GRID; r++) {
      const m = t.mask[r]!;
      if (m === 0) continue;
      const b0 = t.code[s * 3 * GRID + r]!;
      const b1 = t.code[(s * 3 + 1) * GRID + r]!;
      const b2 = t.code[(s * 3 + 2) * GRID + r]!;
      const blockRow = s * 16 + (r >> 3) * 4;
      for (let c = 0; c < GRID; c++) {
        if (((m >>> c) & 1) === 0) continue;
        const code = ((b0 >>> c) & 1) | (((b1 >>> c) & 1) << 1) | (((b2 >>> c) & 1) << 2);
        const orientation = ORIENTATION_OF_CODE[code]!;
        if (orientation < 0) continue;
        const block = blockRow + (c >> 3);
        reliable[block]!++;
        counts[block * ORIENTATIONS + orientation]!++;
      }
    }
  }
  out.fill(0, o, o + DESCRIPTOR_WORDS);
  let bit = 0;
  for (let block = 0; block < SCALES * 16; block++) {
    const n = reliable[block]!;
    for (let k = 0; k < ORIENTATIONS; k++) {
      const v = counts[block * ORIENTATIONS + k]!;
      for (const cut of CUTS) {
        if (n > 0 && v > cut * n) out[o + (bit >> 5)] = out[o + (bit >> 5)]! | (1 << (bit & 31));
        bit++;
      }
    }
  }
}

interface KernelExports {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  scan(desc: number, n: number, out: number): void;
}
const kernelModule = compileKernelModule(STAGE1_KERNEL_BASE64);

/** Whether the first stage scans with the WebAssembly SIMD kernel on this engine. */
export const stage1SimdAvailable = kernelModule !== null;

const PROBE_BYTES = 128; // probe slot at the start of kernel memory (aligned)
const PAGE = 65536;

/**
 * Descriptor store and scanner. With WebAssembly SIMD the descriptors live in the kernel's memory
 * and one call computes all distances (≈ 6 v128 popcounts per palm); otherwise a plain loop does.
 */
export class Stage1Store {
  private kernel: KernelExports | null = null;
  private capacity = 0;
  /** Descriptors, `DESCRIPTOR_WORDS` per palm (a view of kernel memory when SIMD is used). */
  private words = new Uint32Array(0);
  private distances = new Uint16Array(0);
  private readonly probe = new Uint32Array(DESCRIPTOR_WORDS);

  constructor(capacity: number, simd = true) {
    if (simd && kernelModule) this.kernel = instantiateKernel<KernelExports>(kernelModule);
    this.reserve(capacity);
  }

  get simd(): boolean {
    return this.kernel !== null;
  }

  /** Makes room for `capacity` palms, keeping the first `keep` descriptors. */
  reserve(capacity: number, keep = 0): void {
    if (capacity <= this.capacity) return;
    if (this.kernel) {
      const need = PROBE_BYTES + capacity * (DESCRIPTOR_BYTES + 2);
      const mem = this.kernel.memory;
      if (need > mem.buffer.byteLength) mem.grow(Math.ceil((need - mem.buffer.byteLength) / PAGE));
      // descriptors start right after the probe slot and stay in place; distances follow them
      this.words = new Uint32Array(mem.buffer, PROBE_BYTES, capacity * DESCRIPTOR_WORDS);
      this.distances = new Uint16Array(mem.buffer, PROBE_BYTES + capacity * DESCRIPTOR_BYTES, capacity);
    } else {
      const words = new Uint32Array(capacity * DESCRIPTOR_WORDS);
      words.set(this.words.subarray(0, keep * DESCRIPTOR_WORDS));
      this.words = words;
      this.distances = new Uint16Array(capacity);
    }
    this.capacity = capacity;
  }

  set(i: number, t: PalmTemplate): void {
    stage1Descriptor(t, this.words, i * DESCRIPTOR_WORDS);
  }

  /** Copies palm `from`'s descriptor over palm `to`'s (removal by swap). */
  move(from: number, to: number): void {
    this.words.copyWithin(to * DESCRIPTOR_WORDS, from * DESCRIPTOR_WORDS, (from + 1) * DESCRIPTOR_WORDS);
  }

  /** Distances from the probe template to the first `n` palms (valid until the next call). */
  scan(t: PalmTemplate, n: number): Uint16Array {
    stage1Descriptor(t, this.probe, 0);
    const out = this.distances;
    if (this.kernel) {
      new Uint32Array(this.kernel.memory.buffer, 0, DESCRIPTOR_WORDS).set(this.probe);
      this.kernel.scan(PROBE_BYTES, n, PROBE_BYTES + this.capacity * DESCRIPTOR_BYTES);
      return out;
    }
    const p = this.probe;
    const w = this.words;
    for (let i = 0, o = 0; i < n; i++, o += DESCRIPTOR_WORDS) {
      let d = 0;
      for (let k = 0; k < DESCRIPTOR_WORDS; k++) d += popcount32(p[k]! ^ w[o + k]!);
      out[i] = d;
    }
    return out;
  }
}
