import * as zlib from 'node:zlib';

/**
 * Checksums used on the scanner link. Table-driven; tables built once at load.
 * - CRC-8/SMBUS (poly 0x07, init 0x00) guards the 5 header bytes so a corrupted length
 *   field is rejected at once instead of making the parser wait for bytes that never come.
 * - CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF) guards type, seq, length and payload.
 * - CRC-32/ISO-HDLC (the zlib one) guards a whole image across many chunk frames.
 */

/** zlib's CRC-32 where the runtime has it (Node ≥ 20.15): ~10× faster than the table loop, same values. */
const nativeCrc32: ((data: Uint8Array, value?: number) => number) | undefined = (
  zlib as { crc32?: (data: Uint8Array, value?: number) => number }
).crc32;

const CRC8_TABLE = new Uint8Array(256);
const CRC16_TABLE = new Uint16Array(256);
const CRC32_TABLE = new Uint32Array(256);

for (let n = 0; n < 256; n++) {
  let c8 = n;
  for (let k = 0; k < 8; k++) c8 = c8 & 0x80 ? ((c8 << 1) ^ 0x07) & 0xff : (c8 << 1) & 0xff;
  CRC8_TABLE[n] = c8;

  let c16 = n << 8;
  for (let k = 0; k < 8; k++) c16 = c16 & 0x8000 ? ((c16 << 1) ^ 0x1021) & 0xffff : (c16 << 1) & 0xffff;
  CRC16_TABLE[n] = c16;

  let c32 = n;
  for (let k = 0; k < 8; k++) c32 = c32 & 1 ? (c32 >>> 1) ^ 0xedb88320 : c32 >>> 1;
  CRC32_TABLE[n] = c32 >>> 0;
}

export function crc8(data: Uint8Array, start = 0, end = data.length): number {
  let crc = 0;
  for (let i = start; i < end; i++) crc = CRC8_TABLE[(crc ^ data[i]!) & 0xff]!;
  return crc;
}

export function crc16(data: Uint8Array, start = 0, end = data.length): number {
  let crc = 0xffff;
  for (let i = start; i < end; i++)
    crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >>> 8) ^ data[i]!) & 0xff]!;
  return crc;
}

/** Incremental: pass the previous result as `seed` to continue over the next chunk. */
export function crc32(data: Uint8Array, seed = 0): number {
  return nativeCrc32 ? nativeCrc32(data, seed) >>> 0 : crc32Table(data, seed);
}

/** The portable table-driven CRC-32 (runtimes without zlib.crc32); same values and chaining. */
export function crc32Table(data: Uint8Array, seed = 0): number {
  let crc = ~seed >>> 0;
  for (let i = 0; i < data.length; i++) crc = (crc >>> 8) ^ CRC32_TABLE[(crc ^ data[i]!) & 0xff]!;
  return ~crc >>> 0;
}
