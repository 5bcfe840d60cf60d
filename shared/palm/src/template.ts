import { AppError } from '@palmid/contracts/errors';
import { crc32 } from '@palmid/contracts/wire/crc';

/**
 * Palm template, format version 1 (little endian), 928 bytes:
 *
 * | offset | size | field                                                        |
 * |-------:|-----:|--------------------------------------------------------------|
 * | 0      | 2    | magic "PT"                                                   |
 * | 2      | 1    | version (1)                                                  |
 * | 3      | 1    | hand: 0 unknown, 1 left, 2 right                             |
 * | 4      | 1    | quality 0–100                                                |
 * | 5      | 1    | liveness 0–100                                               |
 * | 6      | 1    | grid rows = columns (32)                                     |
 * | 7      | 1    | code planes (6)                                              |
 * | 8      | 1    | coding: 0 wide (σ 2.8 + 5.0), 1 fine (σ 2.2 + 2.8)           |
 * | 9      | 3    | reserved, zero                                               |
 * | 12     | 4    | CRC-32 of bytes 0–11 and 16–end                               |
 * | 16     | 768  | code planes: plane-major, one u32 per grid row, bit c = column c |
 * | 784    | 128  | reliability mask: one u32 per row; 1 = the code bits there are usable |
 * | 912    | 16   | coarse signature (128 bits) for the 1:N first stage          |
 */
export const TEMPLATE_MAGIC = 0x5450; // "PT" read as little-endian u16
export const TEMPLATE_VERSION = 1;
export const GRID = 32;
export const CODE_PLANES = 6;
export const SIGNATURE_WORDS = 4;
export const HEADER_BYTES = 16;
export const TEMPLATE_BYTES = HEADER_BYTES + (CODE_PLANES + 1) * GRID * 4 + SIGNATURE_WORDS * 4;

export type TemplateHand = 'left' | 'right' | 'unknown';

/**
 * Which Gabor scales the code planes hold (capture/gabor.ts `CODING_SCALES`): two templates
 * compare only within one coding, and each coding has its own impostor model (decision.ts
 * `IMPOSTOR_MODELS`). Templates written before the byte existed read as `wide` (it was reserved, zero).
 */
export type TemplateCoding = 'wide' | 'fine';
export const TEMPLATE_CODINGS: readonly TemplateCoding[] = ['wide', 'fine'];
const HAND_CODES: readonly TemplateHand[] = ['unknown', 'left', 'right'];

export interface PalmTemplate {
  version: number;
  hand: TemplateHand;
  quality: number;
  liveness: number;
  /** the scales the code planes hold; `wide` when absent */
  coding?: TemplateCoding;
  /** CODE_PLANES × GRID words, plane-major. */
  code: Uint32Array;
  /** GRID words. */
  mask: Uint32Array;
  /** SIGNATURE_WORDS words. */
  signature: Uint32Array;
}

function invalid(reason: string, message: string): AppError {
  return new AppError('INVALID_REQUEST', message, { field: 'template', reason });
}

function clampPercent(v: number): number {
  return Number.isFinite(v) ? Math.max(0, Math.min(100, Math.round(v))) : 0;
}

export function encodeTemplate(t: PalmTemplate): Uint8Array {
  if (
    t.code.length !== CODE_PLANES * GRID ||
    t.mask.length !== GRID ||
    t.signature.length !== SIGNATURE_WORDS
  ) {
    throw invalid('bad_shape', 'Template arrays have the wrong size');
  }
  const out = new Uint8Array(TEMPLATE_BYTES);
  const view = new DataView(out.buffer);
  view.setUint16(0, TEMPLATE_MAGIC, true);
  out[2] = TEMPLATE_VERSION;
  out[3] = HAND_CODES.indexOf(t.hand);
  out[4] = clampPercent(t.quality);
  out[5] = clampPercent(t.liveness);
  out[6] = GRID;
  out[7] = CODE_PLANES;
  out[8] = TEMPLATE_CODINGS.indexOf(t.coding ?? 'wide');
  let o = HEADER_BYTES;
  for (const w of t.code) {
    view.setUint32(o, w, true);
    o += 4;
  }
  for (const w of t.mask) {
    view.setUint32(o, w, true);
    o += 4;
  }
  for (const w of t.signature) {
    view.setUint32(o, w, true);
    o += 4;
  }
  view.setUint32(12, templateCrc(out), true);
  return out;
}

function templateCrc(bytes: Uint8Array): number {
  return crc32(bytes.subarray(HEADER_BYTES), crc32(bytes.subarray(0, 12)));
}

/**
 * Validates and decodes; any malformed input throws AppError INVALID_REQUEST (field "template").
 * With `expected`, a template of another coding is refused too (reason `wrong_coding`): it cannot be
 * compared with that coding's templates.
 */
export function decodeTemplate(bytes: unknown, expected?: TemplateCoding): PalmTemplate {
  if (!(bytes instanceof Uint8Array)) throw invalid('not_bytes', 'Template must be binary');
  if (bytes.length < HEADER_BYTES) throw invalid('truncated', 'Template is truncated');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint16(0, true) !== TEMPLATE_MAGIC) throw invalid('bad_magic', 'Not a palm template');
  if (bytes[2] !== TEMPLATE_VERSION) {
    throw invalid('unsupported_version', `Unsupported template version ${bytes[2]}`);
  }
  if (bytes.length !== TEMPLATE_BYTES) {
    throw invalid(
      bytes.length < TEMPLATE_BYTES ? 'truncated' : 'bad_length',
      'Template has the wrong length',
    );
  }
  const hand = HAND_CODES[bytes[3]!];
  if (hand === undefined) throw invalid('bad_hand', 'Template hand is invalid');
  if (bytes[4]! > 100 || bytes[5]! > 100) throw invalid('bad_header', 'Template quality is out of range');
  if (bytes[6] !== GRID || bytes[7] !== CODE_PLANES)
    throw invalid('bad_header', 'Template geometry is invalid');
  const coding = TEMPLATE_CODINGS[bytes[8]!];
  if (coding === undefined) throw invalid('bad_header', 'Template coding is unknown');
  if (expected !== undefined && coding !== expected)
    throw invalid(
      'wrong_coding',
      `Template is coded "${coding}"; this network compares "${expected}" templates (the scanner's sensor profile and the server's PALMID_TEMPLATE_CODING must agree)`,
    );
  if (bytes[9] !== 0 || bytes[10] !== 0 || bytes[11] !== 0)
    throw invalid('bad_header', 'Template reserved bytes are not zero');
  if (view.getUint32(12, true) !== templateCrc(bytes)) throw invalid('bad_checksum', 'Template is corrupted');
  const words = new Uint32Array((TEMPLATE_BYTES - HEADER_BYTES) / 4);
  for (let i = 0; i < words.length; i++) words[i] = view.getUint32(HEADER_BYTES + i * 4, true);
  const code = words.subarray(0, CODE_PLANES * GRID);
  const mask = words.subarray(CODE_PLANES * GRID, (CODE_PLANES + 1) * GRID);
  const signature = words.subarray((CODE_PLANES + 1) * GRID);
  let usable = 0;
  for (const w of mask) usable += popcount32(w);
  if (usable < (GRID * GRID) / 8) throw invalid('empty_mask', 'Template has too few reliable code bits');
  return {
    version: TEMPLATE_VERSION,
    hand,
    quality: bytes[4]!,
    liveness: bytes[5]!,
    coding,
    code,
    mask,
    signature,
  };
}

export function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}
