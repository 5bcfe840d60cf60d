import { readFile } from 'node:fs/promises';
import { AppError } from '@palmid/shared/errors.ts';
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
  return (r * 77 + g * 150 + b * 29) >> 8;
}

/** Uncompressed BMP (1/4/8-bit palette, 16/24/32-bit), which sharp cannot read. */
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
    if (buf.length < 54) throw bad('truncated', 'BMP file is truncated');
    width = v.getInt32(18, true);
    height = v.getInt32(22, true);
    bpp = v.getUint16(28, true);
    compression = v.getUint32(30, true);
    colours = v.getUint32(46, true);
  }
  const topDown = height < 0;
  height = Math.abs(height);
  checkSize(width, height);
  if (compression !== 0 && compression !== 3) throw bad('unsupported', 'Compressed BMP is not supported');
  if (![1, 4, 8, 16, 24, 32].includes(bpp)) throw bad('unsupported', `BMP with ${bpp} bits per pixel`);
  const palette: number[] = [];
  if (bpp <= 8) {
    const entries = colours || 1 << bpp;
    const entrySize = headerSize === 12 ? 3 : 4;
    const start = 14 + headerSize;
    for (let i = 0; i < entries; i++) {
      const o = start + i * entrySize;
      if (o + 2 >= buf.length) throw bad('truncated', 'BMP palette is truncated');
      palette.push(luma(buf[o + 2]!, buf[o + 1]!, buf[o]!));
    }
  }
  const stride = Math.ceil((width * bpp) / 32) * 4;
  if (dataOffset + stride * height > buf.length) throw bad('truncated', 'BMP pixel data is truncated');
  const out = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    const row = dataOffset + (topDown ? y : height - 1 - y) * stride;
    for (let x = 0; x < width; x++) {
      let g: number;
      if (bpp === 8) g = palette[buf[row + x]!] ?? 0;
      else if (bpp === 24 || bpp === 32) {
        const o = row + x * (bpp / 8);
        g = luma(buf[o + 2]!, buf[o + 1]!, buf[o]!);
      } else if (bpp === 16) {
        const p = v.getUint16(row + x * 2, true);
        g = luma(((p >> 10) & 31) << 3, ((p >> 5) & 31) << 3, (p & 31) << 3);
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

/** Decodes BMP, PGM/PPM, PNG, JPEG (and what else sharp reads) to 8-bit grey. */
export async function decodeImage(buf: Uint8Array): Promise<GrayImage> {
  if (buf.length === 0) throw bad('empty', 'Image file is empty');
  if (buf[0] === 0x42 && buf[1] === 0x4d) return decodeBmp(buf);
  if (buf[0] === 0x50 && buf[1] !== undefined && buf[1] >= 0x32 && buf[1] <= 0x36 && buf[1] !== 0x34) {
    return decodePnm(buf);
  }
  try {
    const { data, info } = await sharp(buf, { limitInputPixels: MAX_PIXELS })
      .removeAlpha()
      .toColourspace('b-w')
      .raw()
      .toBuffer({ resolveWithObject: true });
    checkSize(info.width, info.height);
    const grey = new Uint8Array(info.width * info.height);
    for (let i = 0; i < grey.length; i++) grey[i] = data[i * info.channels]!;
    return { width: info.width, height: info.height, data: grey };
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw bad('unreadable', 'Not a readable image (BMP, PGM, PNG or JPEG expected)');
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
