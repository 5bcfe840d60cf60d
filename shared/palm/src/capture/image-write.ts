import type { GrayImage } from './image-io.ts';

/** 8-bit palette BMP (the format of most public palmprint databases). */
export function encodeBmp8(img: GrayImage): Uint8Array {
  const stride = Math.ceil(img.width / 4) * 4;
  const offset = 14 + 40 + 256 * 4;
  const out = new Uint8Array(offset + stride * img.height);
  const v = new DataView(out.buffer);
  out[0] = 0x42;
  out[1] = 0x4d;
  v.setUint32(2, out.length, true);
  v.setUint32(10, offset, true);
  v.setUint32(14, 40, true);
  v.setInt32(18, img.width, true);
  v.setInt32(22, img.height, true);
  v.setUint16(26, 1, true);
  v.setUint16(28, 8, true);
  v.setUint32(46, 256, true);
  for (let i = 0; i < 256; i++) {
    out[54 + i * 4] = i;
    out[55 + i * 4] = i;
    out[56 + i * 4] = i;
  }
  for (let y = 0; y < img.height; y++) {
    out.set(
      img.data.subarray((img.height - 1 - y) * img.width, (img.height - y) * img.width),
      offset + y * stride,
    );
  }
  return out;
}

export function encodePgm(img: GrayImage): Uint8Array {
  const header = new TextEncoder().encode(`P5\n${img.width} ${img.height}\n255\n`);
  const out = new Uint8Array(header.length + img.data.length);
  out.set(header);
  out.set(img.data, header.length);
  return out;
}
