import { readFile } from 'node:fs/promises';
import { AppError } from '@palmid/contracts/errors';
import sharp from 'sharp';

/** An 8-bit grey image, row-major. */
export interface GrayImage {
  width: number;
  height: number;
  data: Uint8Array;
}

const MAX_PIXELS = 40_000_000;

function bad(reason: string, message: string): AppError {
  return new AppError('INVALID_REQUEST', message, { field: 'image', reason });
}

function checkSize(width: number, height: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw bad('bad_size', 'Image has no pixels');
  }
  if (width * height > MAX_PIXELS) throw bad('too_large', 'Image is too large');
}

function luma(r: number, g: number, b: number): number {
  return Math.round((r * 77 + g * 150 + b * 29) / 256);
}

/** Lowest set bit and width of a channel mask (BI_BITFIELDS). */
function maskShape(mask: number): { shift: number; max: number } {
  if (mask === 0) return { shift: 0, max: 0 };
  let shift = 0;
  while (((mask >>> shift) & 1) === 0) shift++;
  return { shift, max: mask >>> shift };
}

/** RLE8 / RLE4 pixel indices, bottom-up rows as stored; unspecified pixels stay 0. */
function decodeRle(buf: Uint8Array, start: number, width: number, height: number, bpp: 4 | 8): Uint8Array {
  const idx = new Uint8Array(width * height);
  let x = 0;
  let y = 0;
  let p = start;
  const put = (v: number) => {
    if (x < width && y < height) idx[y * width + x] = v;
    x++;
  };
  while (p + 1 < buf.length && y < height) {
    const n = buf[p]!;
    const b = buf[p + 1]!;
    p += 2;
    if (n > 0) {
      for (let i = 0; i < n; i++) put(bpp === 8 ? b : i & 1 ? b & 15 : b >> 4);
    } else if (b === 0) {
      x = 0;
      y++;
    } else if (b === 1) {
      break;
    } else if (b === 2) {
      x += buf[p] ?? 0;
      y += buf[p + 1] ?? 0;
      p += 2;
    } else {
      const bytes = bpp === 8 ? b : Math.ceil(b / 2);
      for (let i = 0; i < b; i++) {
        const v = bpp === 8 ? buf[p + i] : (buf[p + (i >> 1)] ?? 0) >> (i & 1 ? 0 : 4);
        put((v ?? 0) & (bpp === 8 ? 255 : 15));
      }
      p += bytes + (bytes & 1);
    }
  }
  return idx;
}

/**
 * BMP, which sharp cannot read: 1/4/8-bit palette (grey or colour palettes → luma), RLE4/RLE8,
 * 16/24/32-bit incl. BI_BITFIELDS masks, bottom-up or top-down, OS/2 and V4/V5 headers. The
 * padding of the last row may be missing (some writers omit it).
 */
export function decodeBmp(buf: Uint8Array): GrayImage {
  if (buf.length < 26) throw bad('truncated', 'BMP file is truncated');
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const dataOffset = v.getUint32(10, true);
  const headerSize = v.getUint32(14, true);
  let width: number;
  let height: number;
  let bpp: number;
  let compression = 0;
  let colours = 0;
  if (headerSize === 12) {
    width = v.getUint16(18, true);
    height = v.getInt16(20, true);
    bpp = v.getUint16(24, true);
  } else {
    if (headerSize < 40 || buf.length < 54) throw bad('truncated', 'BMP file is truncated');
    width = v.getInt32(18, true);
    height = v.getInt32(22, true);
    bpp = v.getUint16(28, true);
    compression = v.getUint32(30, true);
    colours = v.getUint32(46, true);
  }
  const topDown = height < 0;
  height = Math.abs(height);
  checkSize(width, height);
  const rle = (compression === 1 && bpp === 8) || (compression === 2 && bpp === 4);
  if (compression !== 0 && compression !== 3 && compression !== 6 && !rle) {
    throw bad('unsupported', `Compressed BMP (compression ${compression}) is not supported`);
  }
  if (![1, 4, 8, 16, 24, 32].includes(bpp)) throw bad('unsupported', `BMP with ${bpp} bits per pixel`);
  if (dataOffset >= buf.length) throw bad('truncated', 'BMP pixel data is truncated');
  const palette: number[] = [];
  if (bpp <= 8) {
    const entries = Math.min(colours || 1 << bpp, 1 << bpp);
    const entrySize = headerSize === 12 ? 3 : 4;
    const start = 14 + headerSize;
    for (let i = 0; i < entries; i++) {
      const o = start + i * entrySize;
      if (o + 2 >= buf.length) throw bad('truncated', 'BMP palette is truncated');
      palette.push(luma(buf[o + 2]!, buf[o + 1]!, buf[o]!));
    }
  }
  const out = new Uint8Array(width * height);
  if (rle) {
    const idx = decodeRle(buf, dataOffset, width, height, bpp as 4 | 8);
    for (let y = 0; y < height; y++) {
      const src = (height - 1 - y) * width;
      for (let x = 0; x < width; x++) out[y * width + x] = palette[idx[src + x]!] ?? 0;
    }
    return { width, height, data: out };
  }
  // Channel masks: explicit for BI_BITFIELDS (after a 40-byte header, or inside V2+ headers).
  let masks = bpp === 16 ? [0x7c00, 0x03e0, 0x001f] : [0xff0000, 0xff00, 0xff];
  if ((compression === 3 || compression === 6) && (bpp === 16 || bpp === 32) && buf.length >= 66) {
    masks = [v.getUint32(54, true), v.getUint32(58, true), v.getUint32(62, true)];
  }
  const shapes = masks.map(maskShape);
  const channel = (p: number, c: number): number => {
    const s = shapes[c]!;
    return s.max === 0 ? 0 : (((p & masks[c]!) >>> s.shift) * 255) / s.max;
  };
  const stride = Math.ceil((width * bpp) / 32) * 4;
  const lastRow = Math.ceil((width * bpp) / 8);
  if (dataOffset + stride * (height - 1) + lastRow > buf.length) {
    throw bad('truncated', 'BMP pixel data is truncated');
  }
  for (let y = 0; y < height; y++) {
    const row = dataOffset + (topDown ? y : height - 1 - y) * stride;
    for (let x = 0; x < width; x++) {
      let g: number;
      if (bpp === 8) g = palette[buf[row + x]!] ?? 0;
      else if (bpp === 24) {
        const o = row + x * 3;
        g = luma(buf[o + 2]!, buf[o + 1]!, buf[o]!);
      } else if (bpp === 32 || bpp === 16) {
        const p = bpp === 32 ? v.getUint32(row + x * 4, true) : v.getUint16(row + x * 2, true);
        g = luma(channel(p, 0), channel(p, 1), channel(p, 2));
      } else if (bpp === 4) {
        const byte = buf[row + (x >> 1)]!;
        g = palette[x & 1 ? byte & 15 : byte >> 4] ?? 0;
      } else {
        const byte = buf[row + (x >> 3)]!;
        g = palette[(byte >> (7 - (x & 7))) & 1] ?? 0;
      }
      out[y * width + x] = g;
    }
  }
  return { width, height, data: out };
}

/** Netpbm P2/P5 (grey) and P3/P6 (colour), 8 or 16 bits. */
export function decodePnm(buf: Uint8Array): GrayImage {
  const kind = String.fromCharCode(buf[1] ?? 0);
  let pos = 2;
  const token = (): number => {
    for (;;) {
      while (pos < buf.length && /\s/.test(String.fromCharCode(buf[pos]!))) pos++;
      if (buf[pos] === 0x23) {
        while (pos < buf.length && buf[pos] !== 0x0a) pos++;
        continue;
      }
      break;
    }
    let s = '';
    while (pos < buf.length && /[0-9]/.test(String.fromCharCode(buf[pos]!)))
      s += String.fromCharCode(buf[pos++]!);
    if (s === '') throw bad('truncated', 'PGM header is truncated');
    return Number(s);
  };
  const width = token();
  const height = token();
  const maxval = token();
  checkSize(width, height);
  if (maxval < 1 || maxval > 65535) throw bad('unsupported', 'PGM maxval out of range');
  const channels = kind === '3' || kind === '6' ? 3 : 1;
  const n = width * height * channels;
  const samples = new Float64Array(n);
  if (kind === '5' || kind === '6') {
    pos++; // single whitespace after maxval
    const bytes = maxval > 255 ? 2 : 1;
    if (pos + n * bytes > buf.length) throw bad('truncated', 'PGM pixel data is truncated');
    for (let i = 0; i < n; i++) {
      samples[i] = bytes === 2 ? (buf[pos + 2 * i]! << 8) | buf[pos + 2 * i + 1]! : buf[pos + i]!;
    }
  } else {
    for (let i = 0; i < n; i++) samples[i] = token();
  }
  const out = new Uint8Array(width * height);
  for (let i = 0; i < width * height; i++) {
    const g =
      channels === 3
        ? luma(samples[3 * i]!, samples[3 * i + 1]!, samples[3 * i + 2]!)
        : (samples[i] as number);
    out[i] = Math.max(0, Math.min(255, Math.round((g * 255) / maxval)));
  }
  return { width, height, data: out };
}

/**
 * Samples of a raw sharp buffer → 8-bit grey. 16-bit data is scaled by the range it actually
 * uses: 16-bit containers often hold 10- or 12-bit sensor values, which ÷ 257 would make black.
 */
function toGrey8(data: Buffer, pixels: number, channels: number): Uint8Array {
  const grey = new Uint8Array(pixels);
  const bytes = data.length / (pixels * channels);
  if (bytes === 1) {
    for (let i = 0; i < pixels; i++) grey[i] = data[i * channels]!;
    return grey;
  }
  const at = (i: number): number =>
    bytes === 2
      ? data.readUInt16LE(i * channels * 2)
      : bytes === 4
        ? data.readFloatLE(i * channels * 4)
        : data.readDoubleLE(i * channels * 8);
  let max = 0;
  for (let i = 0; i < pixels; i++) max = Math.max(max, at(i));
  const full = bytes === 2 ? (max < 1024 ? 1023 : max < 4096 ? 4095 : 65535) : Math.max(1, max);
  for (let i = 0; i < pixels; i++) grey[i] = Math.max(0, Math.min(255, Math.round((at(i) * 255) / full)));
  return grey;
}

/** Decodes BMP, PGM/PPM, PNG (8/16-bit, alpha), JPEG (grey/colour), TIFF, GIF, WebP to 8-bit grey. */
export async function decodeImage(buf: Uint8Array): Promise<GrayImage> {
  if (buf.length === 0) throw bad('empty', 'Image file is empty');
  if (buf[0] === 0x42 && buf[1] === 0x4d) return decodeBmp(buf);
  if (buf[0] === 0x50 && buf[1] !== undefined && buf[1] >= 0x32 && buf[1] <= 0x36 && buf[1] !== 0x34) {
    return decodePnm(buf);
  }
  try {
    const input = sharp(buf, { limitInputPixels: MAX_PIXELS, failOn: 'none' });
    const deep = (await input.metadata()).depth === 'ushort';
    const { data, info } = await input
      .removeAlpha()
      .toColourspace(deep ? 'grey16' : 'b-w')
      .raw(deep ? { depth: 'ushort' } : {})
      .toBuffer({ resolveWithObject: true });
    checkSize(info.width, info.height);
    const grey = toGrey8(data, info.width * info.height, info.channels);
    return { width: info.width, height: info.height, data: grey };
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw bad('unreadable', 'Not a readable image (BMP, PGM, PNG, JPEG or TIFF expected)');
  }
}

export async function readImage(path: string): Promise<GrayImage> {
  let buf: Buffer;
  try {
    buf = await readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new AppError(
      'INVALID_REQUEST',
      `Cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : code}`,
      {
        field: 'image',
        reason: 'unreadable',
      },
    );
  }
  try {
    return await decodeImage(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength));
  } catch (err) {
    if (err instanceof AppError) throw new AppError(err.code, `${path}: ${err.message}`, err.details);
    throw err;
  }
}
