import { AppError } from '@palmid/contracts/errors';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { decodeBmp, decodeImage } from './image-io.ts';
import { encodeBmp8, encodePgm } from './image-write.ts';

const img = { width: 7, height: 5, data: Uint8Array.from({ length: 35 }, (_, i) => i * 7) };

async function reason(bytes: Uint8Array): Promise<string> {
  try {
    await decodeImage(bytes);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return String((err as AppError).details.reason);
  }
  return 'decoded';
}

describe('image decoding', () => {
  it('reads 8-bit palette BMP with row padding, bottom-up', async () => {
    const d = await decodeImage(encodeBmp8(img));
    expect(d).toEqual(img);
  });

  it('reads 24-bit BMP as grey', () => {
    const stride = 8 * 3;
    const buf = new Uint8Array(54 + stride * 2);
    const v = new DataView(buf.buffer);
    buf.set([0x42, 0x4d]);
    v.setUint32(10, 54, true);
    v.setUint32(14, 40, true);
    v.setInt32(18, 8, true);
    v.setInt32(22, -2, true); // top-down
    v.setUint16(28, 24, true);
    buf.fill(200, 54, 54 + stride); // first row white-ish
    const d = decodeBmp(buf);
    expect(d.width).toBe(8);
    expect(d.data[0]).toBe(200);
    expect(d.data[8]).toBe(0);
  });

  it('reads binary and ASCII PGM', async () => {
    expect(await decodeImage(encodePgm(img))).toEqual(img);
    const ascii = new TextEncoder().encode('P2\n# comment\n2 1\n15\n0 15\n');
    expect((await decodeImage(ascii)).data).toEqual(Uint8Array.from([0, 255]));
  });

  it('reads PNG and JPEG through sharp', async () => {
    const png = await sharp(img.data, { raw: { width: 7, height: 5, channels: 1 } })
      .png()
      .toBuffer();
    expect((await decodeImage(new Uint8Array(png))).data).toEqual(img.data);
    const jpg = await sharp(img.data, { raw: { width: 7, height: 5, channels: 1 } })
      .jpeg()
      .toBuffer();
    expect((await decodeImage(new Uint8Array(jpg))).width).toBe(7);
  });

  it('rejects empty, truncated and non-image input with a reason', async () => {
    expect(await reason(new Uint8Array(0))).toBe('empty');
    expect(await reason(encodeBmp8(img).subarray(0, 100))).toBe('truncated');
    expect(await reason(encodePgm(img).subarray(0, 20))).toBe('truncated');
    expect(await reason(new TextEncoder().encode('definitely not an image'))).toBe('unreadable');
  });

  it('reads 16-bit PNG, 12-bit data in a 16-bit PNG, grey+alpha PNG, colour JPEG and 16-bit TIFF', async () => {
    const w = 5;
    const h = 3;
    const g8 = Uint8Array.from({ length: w * h }, (_, i) => i * 17);
    const raw = (data: Uint8Array | Uint16Array, channels: 1 | 2 | 3) =>
      sharp(data, { raw: { width: w, height: h, channels } });
    const decode = async (b: Buffer) => Array.from((await decodeImage(new Uint8Array(b))).data);
    const g16 = Uint16Array.from(g8, (x) => x * 257);
    expect(await decode(await raw(g16, 1).toColourspace('grey16').png().toBuffer())).toEqual(Array.from(g8));
    const g12 = Uint16Array.from(g8, (x) => x * 16);
    const d12 = await decode(await raw(g12, 1).toColourspace('grey16').png().toBuffer());
    for (const [i, v] of d12.entries()) expect(Math.abs(v - g8[i]!)).toBeLessThanOrEqual(4);
    const ga = Uint8Array.from({ length: w * h * 2 }, (_, i) => (i % 2 ? 128 : g8[i >> 1]!));
    expect(await decode(await raw(ga, 2).png().toBuffer())).toEqual(Array.from(g8));
    const rgb = Uint8Array.from({ length: w * h * 3 }, (_, i) => g8[Math.floor(i / 3)]!);
    const dj = await decode(await raw(rgb, 3).jpeg({ quality: 100 }).toBuffer());
    for (const [i, v] of dj.entries()) expect(Math.abs(v - g8[i]!)).toBeLessThanOrEqual(3);
    expect(
      await decode(await raw(g16, 1).toColourspace('grey16').tiff({ compression: 'lzw' }).toBuffer()),
    ).toEqual(Array.from(g8));
  });

  it('reads BMP variants: colour palette, 24-bit odd width, 32-bit, 16-bit 565 bitfields, RLE8, no last-row pad', () => {
    const w = 150;
    const h = 3;
    const grey = (x: number, y: number) => (x * 7 + y * 50) & 255;
    // 8-bit with a non-grey palette (a pure-green ramp), top-down
    const pal = new Uint8Array(256 * 4);
    for (let i = 0; i < 256; i++) pal[i * 4 + 1] = i; // B G R 0
    const stride8 = Math.ceil(w / 4) * 4;
    const px8 = new Uint8Array(stride8 * h);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) px8[y * stride8 + x] = grey(x, y);
    const d8 = decodeBmp(bmp(w, -h, 8, 0, px8, pal));
    expect(d8.data[w + 3]).toBe(Math.round((grey(3, 1) * 150) / 256));
    // 24-bit, width 150 → 452-byte rows (2 padding bytes), bottom-up
    const stride24 = Math.ceil((w * 3) / 4) * 4;
    const px24 = new Uint8Array(stride24 * h);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++)
        px24.fill(grey(x, h - 1 - y), y * stride24 + x * 3, y * stride24 + x * 3 + 3);
    const d24 = decodeBmp(bmp(w, h, 24, 0, px24));
    expect(Array.from(d24.data.subarray(w, 2 * w))).toEqual(Array.from({ length: w }, (_, x) => grey(x, 1)));
    // same data without the padding of the last row
    expect(decodeBmp(bmp(w, h, 24, 0, px24.subarray(0, stride24 * h - 2))).data).toEqual(d24.data);
    // 32-bit BGRX
    const px32 = new Uint8Array(w * 4 * h);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) px32.fill(grey(x, y), (y * w + x) * 4, (y * w + x) * 4 + 3);
    expect(decodeBmp(bmp(w, -h, 32, 0, px32)).data[w + 9]).toBe(grey(9, 1));
    // 16-bit RGB565 with BI_BITFIELDS masks after the header
    const masks = new Uint8Array(12);
    new DataView(masks.buffer).setUint32(0, 0xf800, true);
    new DataView(masks.buffer).setUint32(4, 0x07e0, true);
    new DataView(masks.buffer).setUint32(8, 0x001f, true);
    const px16 = new Uint8Array(4 * 1);
    new DataView(px16.buffer).setUint16(0, 0xffff, true); // white
    new DataView(px16.buffer).setUint16(2, 0x07e0, true); // pure green
    const d16 = decodeBmp(bmp(2, 1, 16, 3, px16, masks));
    expect(Array.from(d16.data)).toEqual([255, 149]);
    // RLE8: a run of 4 × index 200, then 2 literal pixels, end of line, end of bitmap
    const greyPal = new Uint8Array(256 * 4);
    for (let i = 0; i < 256; i++) greyPal.fill(i, i * 4, i * 4 + 3);
    const rle = Uint8Array.from([4, 200, 0, 3, 10, 20, 30, 0, 0, 0, 0, 1]);
    expect(Array.from(decodeBmp(bmp(7, 1, 8, 1, rle, greyPal)).data)).toEqual([
      200, 200, 200, 200, 10, 20, 30,
    ]);
  });
});

/** A BMP with a 40-byte info header; `extra` (palette or bitfield masks) follows the header. */
function bmp(
  width: number,
  height: number,
  bpp: number,
  compression: number,
  pixels: Uint8Array,
  extra = new Uint8Array(0),
): Uint8Array {
  const offset = 54 + extra.length;
  const buf = new Uint8Array(offset + pixels.length);
  const v = new DataView(buf.buffer);
  buf.set([0x42, 0x4d]);
  v.setUint32(2, buf.length, true);
  v.setUint32(10, offset, true);
  v.setUint32(14, 40, true);
  v.setInt32(18, width, true);
  v.setInt32(22, height, true);
  v.setUint16(26, 1, true);
  v.setUint16(28, bpp, true);
  v.setUint32(30, compression, true);
  v.setUint32(46, bpp <= 8 ? extra.length / 4 : 0, true);
  buf.set(extra, 54);
  buf.set(pixels, offset);
  return buf;
}
