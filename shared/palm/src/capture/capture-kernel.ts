import { compileKernelModule, instantiateKernel } from '../wasm/kernel.ts';
import { CAPTURE_KERNEL_BASE64 } from './capture-kernel.wasm.ts';

/**
 * The capture path's WebAssembly SIMD kernel (capture-kernel.wat): the work-scale block average,
 * the periodicity's lag sums, the ROI crop, the work image's foreground and the hand's grey-level
 * sums, each giving the same bytes / doubles / floats / integers as its JavaScript loop
 * (docs/palm-pipeline.md, "Speed of the capture path"). `null` exports: no WebAssembly SIMD
 * on this engine; callers then run the JavaScript loops.
 */
interface KernelExports {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  blockAverage(
    src: number,
    fw: number,
    f: number,
    w: number,
    h: number,
    cols: number,
    out: number,
    sums: number,
  ): void;
  lagSums(res: number, pw: number, ph: number, out: number): void;
  lag0Sums(res: number, pw: number, ph: number, out: number): void;
  edgeSums(res: number, pw: number, ph: number, out: number): void;
  crop(
    src: number,
    w: number,
    y0: number,
    tab: number,
    colsInner: number,
    out: number,
    cx: number,
    cy: number,
    side: number,
    xMax: number,
    yMax: number,
  ): void;
  foreground(src: number, n: number, t: number, inf: number, mask: number, dist: number): number;
  above(src: number, n: number, t: number, mask: number): void;
  handSums(
    work: number,
    mask: number,
    dist: number,
    n: number,
    eLo: number,
    eHi: number,
    iLo: number,
    iHi: number,
    out: number,
  ): void;
}

function instantiate(): KernelExports | null {
  const module = compileKernelModule(CAPTURE_KERNEL_BASE64);
  if (!module) return null;
  try {
    return instantiateKernel<KernelExports>(module);
  } catch {
    return null;
  }
}

const kernel = instantiate();

/** Whether the SIMD kernel is in use on this engine. */
export const captureSimdAvailable = kernel !== null;

const PAGE = 65536;

/** Grows the kernel memory to at least `bytes`; views made before a growth are stale. */
function reserve(k: KernelExports, bytes: number): ArrayBuffer {
  const have = k.memory.buffer.byteLength;
  if (bytes > have) k.memory.grow(Math.ceil((bytes - have) / PAGE));
  return k.memory.buffer;
}

const align16 = (n: number) => (n + 15) & ~15;

/** Frame bytes copied per call of the block average: a band of rows that stays in the cache. */
const BAND_BYTES = 1 << 14;

/**
 * f × f block average (rounded half up) of a w·f × h·f corner of the frame, f ≤ 16, or null
 * without the kernel. The frame is copied into the kernel's memory a band of rows at a time
 * (about 64 KB, read back by the kernel while still in the cache).
 */
export function blockAverageSimd(
  data: Uint8Array,
  fw: number,
  f: number,
  w: number,
  h: number,
): Uint8Array | null {
  if (!kernel || f < 2 || f > 16 || w < 1 || h < 1) return null;
  const band = Math.max(1, Math.min(h, Math.floor(BAND_BYTES / (fw * f)))); // output rows a call
  const inBytes = fw * band * f;
  const cols = align16(inBytes + 16); // 16 readable bytes after the last row
  const out = cols + align16(w * f + 16) * 2;
  const buffer = reserve(kernel, out + w * h);
  const mem = new Uint8Array(buffer);
  for (let y = 0; y < h; y += band) {
    const rows = Math.min(band, h - y);
    mem.set(data.subarray(y * f * fw, (y + rows) * f * fw), 0);
    kernel.blockAverage(0, fw, f, w, rows, cols, out + y * w, 0);
  }
  return new Uint8Array(buffer, out, w * h).slice();
}

/**
 * The sums of the f × f blocks of a w·f × h·f window of the frame whose top-left pixel is
 * (x0, y0) (2 ≤ f ≤ 257), or null without the kernel. Only the window's rows are copied into
 * the kernel's memory. Valid until the next call into this module.
 */
export function blockSumsSimd(
  frame: { width: number; data: Uint8Array },
  x0: number,
  y0: number,
  f: number,
  w: number,
  h: number,
): Int32Array | null {
  if (!kernel || f < 2 || f > 257 || w < 1 || h < 1) return null;
  const fw = frame.width;
  const inBytes = fw * h * f;
  const cols = align16(inBytes + x0 + 16); // 16 readable bytes after the window's last row
  const out = cols + align16(w * f + 16) * 2;
  const buffer = reserve(kernel, out + w * h * 4);
  new Uint8Array(buffer).set(frame.data.subarray(y0 * fw, y0 * fw + inBytes), 0);
  kernel.blockAverage(x0, fw, f, w, h, cols, out, 1);
  return new Int32Array(buffer, out, w * h);
}

/** Doubles in the `lagSums` layout: 4 for row lag 0, then 60 interior and 60 edge sums. */
export const LAG_SUMS = 124;

/**
 * A `pw × ph` array of doubles in the kernel's memory for `lagSums`, or null without the kernel.
 * Valid until the next call into this module.
 */
export function lagBuffer(pw: number, ph: number): Float64Array | null {
  if (!kernel) return null;
  const buffer = reserve(kernel, (pw * ph + 2) * 8 + LAG_SUMS * 8);
  return new Float64Array(buffer, 0, pw * ph);
}

/**
 * The periodicity's autocorrelation sums of the `lagBuffer` contents (pw > 10, ph > 5), laid out
 * as `autocorrelationSumsJs` in capture-checks.ts lays them out: [0, 4) row lag 0, horizontal
 * lags 2–5; 4 + (ly − 1) · 12 + lx + 5 the interior columns 5 … pw − 6 of row lag ly (1–5);
 * 64 + (ly − 1) · 12 + lx + 5 the five columns at each end of the row.
 */
export function lagSums(pw: number, ph: number): Float64Array {
  const k = kernel as KernelExports;
  const out = (pw * ph + 2) * 8;
  k.lag0Sums(0, pw, ph, out);
  k.lagSums(0, pw, ph, out + 4 * 8);
  k.edgeSums(0, pw, ph, out + 64 * 8);
  return new Float64Array(k.memory.buffer, out, LAG_SUMS);
}

/** Doubles in each of the crop's four tables (2 taps × 128 sub-columns or sub-rows). */
const CROP_TABLE = 256;
/** Outputs of the crop, 128 × 128 float32 (ROI_SIZE of model-graph.ts; the kernel is fixed to it). */
export const CROP_SIDE = 128;

/**
 * The 2 × 2 supersampled crop of `cropPalm` (hand-roi.ts) on the kernel, or null without it.
 * `urx`, `ury`, `vux`, `vuy`: its per-sub-column and per-sub-row products (256 each); rows
 * `y0 … y1` of the frame must hold rows iy and iy + 1 of every tap (only those are copied into the
 * kernel's memory); the frame at least 2 × 2. Writes CROP_SIDE² floats into `out`.
 */
export function cropSimd(
  frame: { width: number; height: number; data: Uint8Array },
  y0: number,
  y1: number,
  tables: readonly [Float64Array, Float64Array, Float64Array, Float64Array],
  colsInner: boolean,
  square: { cx: number; cy: number; side: number },
  out: Float32Array,
): boolean {
  if (!kernel || frame.width < 2 || frame.height < 2 || y0 < 0 || y1 >= frame.height || y1 < y0) return false;
  const w = frame.width;
  const inBytes = (y1 - y0 + 1) * w;
  const tab = align16(inBytes + 16);
  const outAt = tab + 4 * CROP_TABLE * 8;
  const buffer = reserve(kernel, outAt + CROP_SIDE * CROP_SIDE * 4);
  new Uint8Array(buffer).set(frame.data.subarray(y0 * w, y0 * w + inBytes), 0);
  const t = new Float64Array(buffer, tab, 4 * CROP_TABLE);
  for (let i = 0; i < 4; i++) t.set(tables[i]!.subarray(0, CROP_TABLE), i * CROP_TABLE);
  kernel.crop(
    0,
    w,
    y0,
    tab,
    colsInner ? 1 : 0,
    outAt,
    square.cx,
    square.cy,
    square.side,
    w - 1.001,
    frame.height - 1.001,
  );
  out.set(new Float32Array(buffer, outAt, CROP_SIDE * CROP_SIDE));
  return true;
}

/**
 * The work image's foreground on the kernel, or null without it: `mask` 1 where a pixel is above
 * `threshold` (an integer 0–255), `distance` `inf` (≤ 65535) there and 0 elsewhere, and their count.
 */
export function foregroundSimd(
  data: Uint8Array,
  threshold: number,
  inf: number,
): { mask: Uint8Array; distance: Uint16Array; count: number } | null {
  if (!kernel || !Number.isInteger(threshold) || threshold < 0 || threshold > 255) return null;
  if (!Number.isInteger(inf) || inf < 0 || inf > 65535) return null;
  const n = data.length;
  const maskAt = align16(n + 16);
  const distAt = maskAt + align16(n + 16);
  const buffer = reserve(kernel, distAt + 2 * n + 32);
  new Uint8Array(buffer).set(data, 0);
  const count = kernel.foreground(0, n, threshold, inf, maskAt, distAt);
  return {
    mask: new Uint8Array(buffer, maskAt, n).slice(),
    distance: new Uint16Array(buffer, distAt, n).slice(),
    count,
  };
}

/** 1 where a pixel is above `threshold` (an integer 0–255), else 0, on the kernel; null without it. */
export function aboveSimd(data: Uint8Array, threshold: number): Uint8Array | null {
  if (!kernel || !Number.isInteger(threshold) || threshold < 0 || threshold > 255) return null;
  const n = data.length;
  const maskAt = align16(n + 16);
  const buffer = reserve(kernel, maskAt + n + 16);
  new Uint8Array(buffer).set(data, 0);
  kernel.above(0, n, threshold, maskAt);
  return new Uint8Array(buffer, maskAt, n).slice();
}

/** The sums of `handSumsSimd`, in its order. */
export interface HandSums {
  sum: number;
  count: number;
  saturated: number;
  edge: number;
  edgeN: number;
  inner: number;
  innerN: number;
}

/**
 * Over the work pixels whose `mask` byte is set: the grey-level sum and count, the count at
 * ≥ 250, and sum and count of the pixels whose `dist` lies in [eLo, eHi] (the edge band), or else
 * in [iLo, iHi] (the inner band); integer bounds 0–65535. Null without the kernel.
 */
export function handSumsSimd(
  work: Uint8Array,
  mask: Uint8Array,
  dist: Uint16Array,
  bands: readonly [number, number, number, number],
): HandSums | null {
  const n = work.length;
  if (!kernel || mask.length !== n || dist.length !== n || n >= 2 ** 23) return null;
  if (!bands.every((b) => Number.isInteger(b) && b >= 0 && b <= 65535)) return null;
  const maskAt = align16(n + 16);
  const distAt = maskAt + align16(n + 16);
  const outAt = distAt + align16(2 * n + 32);
  const buffer = reserve(kernel, outAt + 7 * 16);
  const bytes = new Uint8Array(buffer);
  bytes.set(work, 0);
  bytes.set(mask, maskAt);
  bytes.fill(0, maskAt + n, maskAt + n + 16); // the last vector's pixels past n are off the hand
  new Uint16Array(buffer, distAt, n).set(dist);
  kernel.handSums(0, maskAt, distAt, n, bands[0], bands[1], bands[2], bands[3], outAt);
  const lanes = new Int32Array(buffer, outAt, 28);
  const total = (k: number) => lanes[4 * k]! + lanes[4 * k + 1]! + lanes[4 * k + 2]! + lanes[4 * k + 3]!;
  return {
    sum: total(0),
    count: total(1),
    saturated: total(2),
    edge: total(3),
    edgeN: total(4),
    inner: total(5),
    innerN: total(6),
  };
}
