import { crc8, crc16 } from './crc.ts';

/**
 * One frame on the scanner link (all multi-byte fields little-endian):
 *
 * | offset  | size | field                                           |
 * |---------|------|-------------------------------------------------|
 * | 0       | 1    | SOF = 0xA5                                      |
 * | 1       | 1    | type                                            |
 * | 2       | 1    | seq                                             |
 * | 3       | 2    | payload length N (0…MAX_PAYLOAD)                |
 * | 5       | 1    | header CRC-8 over bytes 1…4                     |
 * | 6       | N    | payload                                         |
 * | 6+N     | 2    | CRC-16/CCITT-FALSE over bytes 1…5+N             |
 */
export const SOF = 0xa5;
export const HEADER_SIZE = 6;
export const TRAILER_SIZE = 2;
export const FRAME_OVERHEAD = HEADER_SIZE + TRAILER_SIZE;
export const MAX_PAYLOAD = 4096;

export interface Frame {
  type: number;
  seq: number;
  payload: Uint8Array;
}

export function encodeFrame(frame: Frame): Uint8Array {
  const { type, seq, payload } = frame;
  if (!Number.isInteger(type) || type < 0 || type > 0xff)
    throw new RangeError(`frame type out of range: ${type}`);
  if (!Number.isInteger(seq) || seq < 0 || seq > 0xff) throw new RangeError(`frame seq out of range: ${seq}`);
  if (payload.length > MAX_PAYLOAD)
    throw new RangeError(`payload too large: ${payload.length} > ${MAX_PAYLOAD}`);
  const out = new Uint8Array(FRAME_OVERHEAD + payload.length);
  out[0] = SOF;
  out[1] = type;
  out[2] = seq;
  out[3] = payload.length & 0xff;
  out[4] = payload.length >>> 8;
  out[5] = crc8(out, 1, 5);
  out.set(payload, HEADER_SIZE);
  const crc = crc16(out, 1, HEADER_SIZE + payload.length);
  out[HEADER_SIZE + payload.length] = crc & 0xff;
  out[HEADER_SIZE + payload.length + 1] = crc >>> 8;
  return out;
}
