import { AppError } from '@palmid/shared/errors.ts';
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
});
