import * as crypto from 'node:crypto';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Opaque bearer secrets (API keys, user tokens, device tokens). They carry 256 bits of entropy, so a
 * plain SHA-256 is a sound at-rest hash (no dictionary to attack); lookups go by hash and the final
 * comparison is constant-time.
 */
export function newSecret(prefix: string, bytes = 32): string {
  return prefix + randomBytes(bytes).toString('base64url');
}

/** One-shot SHA-256 where Node has it (20.12+: no Hash object per call; every authenticated request hashes). */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

export const hashSecret: (secret: string) => string = oneShot
  ? (secret) => oneShot('sha256', secret, 'hex')
  : (secret) => createHash('sha256').update(secret, 'utf8').digest('hex');

export function safeEqualHex(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'hex');
  const bb = Buffer.from(b, 'hex');
  return ba.length === bb.length && ba.length > 0 && timingSafeEqual(ba, bb);
}

/** Human-friendly one-time code for kiosk enrolment: 10 characters, no look-alikes (≈ 50 bits). */
const CODE_ALPHABET = '23456789ABCDEFGHJKLMNPQRSTUVWXYZ';
export function newClaimCode(): string {
  const bytes = randomBytes(10);
  let out = '';
  for (const b of bytes) out += CODE_ALPHABET[b & 31];
  return `${out.slice(0, 5)}-${out.slice(5)}`;
}

export function normaliseClaimCode(code: string): string {
  return code.toUpperCase().replace(/[^0-9A-Z]/g, '');
}
