import { aboveSimd, blockAverageSimd, foregroundSimd } from './capture-kernel.ts';
import type { GrayImage } from './image-io.ts';

/**
 * The work-scale image of the hand geometry: a frame block-averaged by an integer factor (each
 * output pixel the mean of an f × f block, rounded half up), and its negative for hands darker
 * than their background. Integer-only; the fast paths read four bytes at a time and give the
 * same bytes as the plain block average (`blockAverageReference`, checked by work-scale.test.ts).
 * docs/palm-pipeline.md, "Speed of the capture path".
 */

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Plain block average by `f` (the definition; also the path for frames the word paths do not take). */
export function blockAverageReference(frame: GrayImage, f: number): GrayImage {
  const w = Math.floor(frame.width / f);
  const h = Math.floor(frame.height / f);
  const data = new Uint8Array(w * h);
  const src = frame.data;
  const fw = frame.width;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      let s = 0;
      for (let dy = 0; dy < f; dy++) {
        const b = (y * f + dy) * fw + x * f;
        for (let dx = 0; dx < f; dx++) s += src[b + dx]!;
      }
      data[y * w + x] = Math.round(s / (f * f));
    }
  }
  return { width: w, height: h, data };
}

/** The frame's rows can be read as little-endian 32-bit words (every row starts on a word). */
function wordRows(frame: GrayImage): boolean {
  return LITTLE_ENDIAN && frame.width % 4 === 0 && frame.data.byteOffset % 4 === 0;
}

/** 2 × 2 block average, four bytes a read (VGA frames). */
function half(frame: GrayImage): GrayImage {
  const fw = frame.width;
  const w = Math.floor(fw / 2);
  const h = Math.floor(frame.height / 2);
  const data = new Uint8Array(w * h);
  const src = frame.data;
  // the two 16-bit lanes of (v & 0x00ff00ff) + ((v >>> 8) & 0x00ff00ff) hold the sums of
  // bytes 0+1 and 2+3; w is even here (fw a multiple of 4)
  const words = new Uint32Array(src.buffer, src.byteOffset, (fw * frame.height) >> 2);
  const fw4 = fw >> 2;
  for (let y = 0; y < h; y++) {
    const a = 2 * y * fw4;
    const b = a + fw4;
    const o = y * w;
    for (let k = 0; k < fw4; k++) {
      const p = words[a + k]!;
      const q = words[b + k]!;
      const sum = (p & 0xff00ff) + ((p >>> 8) & 0xff00ff) + (q & 0xff00ff) + ((q >>> 8) & 0xff00ff);
      data[o + 2 * k] = ((sum & 0xffff) + 2) >> 2; // Math.round(sum / 4)
      data[o + 2 * k + 1] = ((sum >>> 16) + 2) >> 2;
    }
  }
  return { width: w, height: h, data };
}

/**
 * f × f block average for any f ≥ 2 (2 ≤ f ≤ 16), four bytes a read: the f rows of an output row
 * are summed per column in 16-bit lanes (bytes 0 and 2 of each word in one accumulator, 1 and 3
 * in the other; at most 16 × 255 per lane), then a running sum along the row gives each block's
 * sum as a difference. Rounded half up in integers: floor((2s + f²) / 2f²) = Math.round(s / f²)
 * (Math.round of the quotient cost more than the rest of the pass).
 */
function blocks(frame: GrayImage, f: number): GrayImage {
  const fw = frame.width;
  const w = Math.floor(fw / f);
  const h = Math.floor(frame.height / f);
  const data = new Uint8Array(w * h);
  const src = frame.data;
  const words = new Int32Array(src.buffer, src.byteOffset, (fw * frame.height) >> 2);
  const fw4 = fw >> 2;
  // only the columns of whole blocks are read
  const used = (w * f + 3) >> 2;
  const even = new Int32Array(used);
  const odd = new Int32Array(used);
  // prefix[c]: sum of the columns before c
  const prefix = new Int32Array(used * 4 + 1);
  const area = f * f;
  const area2 = 2 * area;
  for (let y = 0; y < h; y++) {
    let r = y * f * fw4;
    for (let k = 0; k < used; k++) {
      const v = words[r + k]!;
      even[k] = v & 0xff00ff;
      odd[k] = (v >>> 8) & 0xff00ff;
    }
    for (let dy = 1; dy < f; dy++) {
      r += fw4;
      for (let k = 0; k < used; k++) {
        const v = words[r + k]!;
        even[k] = even[k]! + (v & 0xff00ff);
        odd[k] = odd[k]! + ((v >>> 8) & 0xff00ff);
      }
    }
    let p = 0;
    for (let k = 0, c = 1; k < used; k++, c += 4) {
      const e = even[k]!;
      const o = odd[k]!;
      p += e & 0xffff;
      prefix[c] = p;
      p += o & 0xffff;
      prefix[c + 1] = p;
      p += e >>> 16;
      prefix[c + 2] = p;
      p += o >>> 16;
      prefix[c + 3] = p;
    }
    const out = y * w;
    for (let x = 0, c = 0; x < w; x++, c += f) {
      data[out + x] = ((2 * (prefix[c + f]! - prefix[c]!) + area) / area2) | 0;
    }
  }
  return { width: w, height: h, data };
}

/** Block average of a frame by an integer factor f ≥ 1 (f = 1: the frame itself). */
export function blockAverage(frame: GrayImage, f: number): GrayImage {
  if (f <= 1) return frame;
  const w = Math.floor(frame.width / f);
  const h = Math.floor(frame.height / f);
  // the JavaScript word path is faster for f = 2 (pairs of bytes of one word), the kernel above it
  const simd = f > 2 ? blockAverageSimd(frame.data, frame.width, f, w, h) : null;
  if (simd) return { width: w, height: h, data: simd };
  return blockAverageJs(frame, f);
}

/** `blockAverage` without the WebAssembly kernel (engines without SIMD; the reference tests). */
export function blockAverageJs(frame: GrayImage, f: number): GrayImage {
  if (f <= 1) return frame;
  if (f <= 16 && wordRows(frame)) return f === 2 ? half(frame) : blocks(frame, f);
  return blockAverageReference(frame, f);
}

/** The negative of an image (a dark hand on a bright background becomes a bright one on dark). */
export function negative(img: GrayImage): GrayImage {
  const src = img.data;
  const data = new Uint8Array(src.length);
  for (let i = 0; i < data.length; i++) data[i] = 255 - src[i]!;
  return { width: img.width, height: img.height, data };
}

/** The foreground of a work image: `mask` 1 above the threshold, `distance` `inf` there, the count. */
export interface Foreground {
  mask: Uint8Array;
  distance: Uint16Array;
  count: number;
}

/**
 * Pixels above `threshold`: the hand mask, the chamfer distance's start values (`inf` on the hand,
 * 0 elsewhere) and their count, in one pass (on the kernel for integer thresholds).
 */
export function foreground(data: Uint8Array, threshold: number, inf: number): Foreground {
  return foregroundSimd(data, threshold, inf) ?? foregroundJs(data, threshold, inf);
}

/** `foreground` without the WebAssembly kernel (engines without SIMD; the reference tests). */
export function foregroundJs(data: Uint8Array, threshold: number, inf: number): Foreground {
  const mask = new Uint8Array(data.length);
  const distance = new Uint16Array(data.length);
  let count = 0;
  for (let i = 0; i < data.length; i++) {
    if (data[i]! > threshold) {
      mask[i] = 1;
      distance[i] = inf;
      count++;
    }
  }
  return { mask, distance, count };
}

/**
 * 1 where a pixel is above `level` (any number), else 0. A byte is above `level` exactly when it
 * is above ⌊level⌋, so the kernel's byte comparison serves every level from 0 up to 256.
 */
export function maskAbove(data: Uint8Array, level: number): Uint8Array {
  // the kernel declines (null) a ⌊level⌋ outside 0–255 or not a number
  return aboveSimd(data, Math.floor(level)) ?? maskAboveJs(data, level);
}

/** `maskAbove` without the WebAssembly kernel (engines without SIMD; the reference tests). */
export function maskAboveJs(data: Uint8Array, level: number): Uint8Array {
  const mask = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) mask[i] = data[i]! > level ? 1 : 0;
  return mask;
}
