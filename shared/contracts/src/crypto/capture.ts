import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { type CaptureAttestation, captureAttestationSchema } from '../capture/schema.ts';

/**
 * Attested captures (docs/security.md, docs/websocket.md): every capture device holds an Ed25519 key pair
 * made on the device and signs each capture it sends. The signature covers the canonical bytes below,
 * so the server can tell a palm that was captured just now, by a device it registered, from a stored or
 * intercepted template. This file is the one definition of those bytes, the signer and the verifier.
 *
 * Canonical bytes (version 1), all integers big-endian:
 *
 *   offset  size  field
 *        0    16  ASCII "PALMID-CAPTURE-1" (domain separation and version)
 *       16     1  purpose: 1 identify (kiosk), 2 enroll (kiosk), 3 direct (POST /api/v1/auth),
 *                 4 register (palms of POST /api/v1/mpc/users/create and update)
 *       17    16  device id (the pvs_id, UUID as 16 bytes)
 *       33    16  subject (auth_id for identify, enrolment_id for enroll, capture_id for direct; UUID)
 *       49     1  nonce length N (0..64; 0 for direct, which has no server nonce)
 *       50     N  nonce bytes (the base64url-decoded server nonce)
 *     50+N    32  SHA-256 of the template bytes (of the empty string when no template is sent)
 *     82+N     1  hand: 0 not given (the side undecided), 1 left, 2 right
 *     83+N     8  quality, IEEE 754 binary64
 *     91+N     8  liveness, IEEE 754 binary64
 *     99+N     8  captured_at, milliseconds since the Unix epoch (uint64)
 *    107+N     8  device counter (uint64, strictly increasing per device)
 *    115+N        end
 *
 * Binary with fixed widths, so any language produces the same bytes without a canonical-JSON library;
 * quality and liveness are the exact doubles sent on the wire (no rounding step to disagree on).
 */

export const CAPTURE_MAGIC = 'PALMID-CAPTURE-1';
export const CAPTURE_PURPOSES = { identify: 1, enroll: 2, direct: 3, register: 4 } as const;
export type CapturePurpose = keyof typeof CAPTURE_PURPOSES;
/** A capture whose captured_at is further than this from the server's clock is stale. */
export const CAPTURE_FRESHNESS_MS = 60_000;
export const MAX_NONCE_BYTES = 64;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const B64URL_RE = /^[A-Za-z0-9_-]*$/;

export { type CaptureAttestation, captureAttestationSchema };

/** What a capture attestation vouches for. */
export interface CaptureClaims {
  purpose: CapturePurpose;
  deviceId: string;
  subject: string;
  /** base64url server nonce; '' when there is none (direct path) */
  nonce: string;
  /** the template bytes as sent (undefined: no template, a presentation-attack report) */
  template: Uint8Array | undefined;
  hand: 'left' | 'right' | undefined;
  quality: number;
  liveness: number;
  /** ms since the Unix epoch */
  capturedAt: number;
  counter: number;
}

export class CaptureEncodingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CaptureEncodingError';
  }
}

function uuidBytes(id: string, field: string): Buffer {
  if (!UUID_RE.test(id)) throw new CaptureEncodingError(`${field} must be a UUID`);
  return Buffer.from(id.replace(/-/g, ''), 'hex');
}

function unit(x: number, field: string): number {
  if (typeof x !== 'number' || !Number.isFinite(x) || x < 0 || x > 1)
    throw new CaptureEncodingError(`${field} must be a number from 0 to 1`);
  return x;
}

function uint(x: number, field: string): bigint {
  if (!Number.isSafeInteger(x) || x < 0)
    throw new CaptureEncodingError(`${field} must be a non-negative integer`);
  return BigInt(x);
}

export function sha256(bytes: Uint8Array): Buffer {
  return createHash('sha256').update(bytes).digest();
}

/** The canonical bytes a capture signature covers (layout above). Throws CaptureEncodingError on bad claims. */
export function captureBytes(c: CaptureClaims): Buffer {
  const purpose = CAPTURE_PURPOSES[c.purpose];
  if (purpose === undefined)
    throw new CaptureEncodingError('purpose must be identify, enroll, direct or register');
  if (!B64URL_RE.test(c.nonce)) throw new CaptureEncodingError('nonce must be base64url');
  const nonce = Buffer.from(c.nonce, 'base64url');
  if (nonce.length > MAX_NONCE_BYTES)
    throw new CaptureEncodingError(`nonce must be at most ${MAX_NONCE_BYTES} bytes`);
  const out = Buffer.alloc(115 + nonce.length);
  let o = out.write(CAPTURE_MAGIC, 0, 'ascii');
  o = out.writeUInt8(purpose, o);
  o += uuidBytes(c.deviceId, 'device_id').copy(out, o);
  o += uuidBytes(c.subject, 'subject').copy(out, o);
  o = out.writeUInt8(nonce.length, o);
  o += nonce.copy(out, o);
  o += sha256(c.template ?? new Uint8Array(0)).copy(out, o);
  o = out.writeUInt8(c.hand === undefined ? 0 : c.hand === 'left' ? 1 : 2, o);
  o = out.writeDoubleBE(unit(c.quality, 'quality'), o);
  o = out.writeDoubleBE(unit(c.liveness, 'liveness'), o);
  o = out.writeBigUInt64BE(uint(c.capturedAt, 'captured_at'), o);
  out.writeBigUInt64BE(uint(c.counter, 'counter'), o);
  return out;
}

/** A fresh device key pair (Ed25519), made on the device. */
export function generateDeviceKey(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ed25519');
}

/** The raw 32-byte Ed25519 public key, base64url: the form registered with the server. */
export function publicKeyToString(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' }) as { crv?: string; x?: string };
  if (jwk.crv !== 'Ed25519' || !jwk.x) throw new CaptureEncodingError('not an Ed25519 key');
  return jwk.x;
}

/** Parses a registered public key (raw 32 bytes, base64url); throws CaptureEncodingError if it is not one. */
export function publicKeyFromString(x: string): KeyObject {
  if (!/^[A-Za-z0-9_-]{43}$/.test(x))
    throw new CaptureEncodingError('public key must be 32 bytes, base64url');
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
}

export function privateKeyFromPem(pem: string): KeyObject {
  const key = createPrivateKey(pem);
  if (key.asymmetricKeyType !== 'ed25519')
    throw new CaptureEncodingError('the device key is not an Ed25519 key');
  return key;
}

/** The claims to sign, with the device key; the nonce may be left out where there is none. */
export interface AttestInput extends Omit<CaptureClaims, 'nonce'> {
  privateKey: KeyObject;
  nonce?: string | undefined;
}

/** Signs one capture and returns the attestation to send beside it. */
export function attestCapture(a: AttestInput): CaptureAttestation {
  const claims: CaptureClaims = { ...a, nonce: a.nonce ?? '' };
  const signature = sign(null, captureBytes(claims), a.privateKey).toString('base64url');
  return {
    device_id: a.deviceId,
    subject: a.subject,
    ...(a.nonce ? { nonce: a.nonce } : {}),
    captured_at: new Date(a.capturedAt).toISOString(),
    counter: a.counter,
    signature,
  };
}

/** The sample an attestation travels with, as received. */
export interface AttestedSample {
  template?: Uint8Array | undefined;
  hand?: 'left' | 'right' | undefined;
  quality?: number | undefined;
  liveness?: number | undefined;
}

export type CaptureRejection = 'missing' | 'malformed' | 'liveness_missing' | 'signature' | 'stale';

export type CaptureCheck =
  | { ok: true; claims: CaptureClaims }
  | { ok: false; why: CaptureRejection; message: string };

/**
 * The stateless half of the verifier: rebuilds the claims from what was received, checks the signature
 * with the device's registered key and the freshness of captured_at. The caller then checks what needs
 * state: that the nonce is its own and unused and that the counter increases (docs/security.md).
 */
export function verifyCapture(input: {
  attestation: CaptureAttestation | undefined;
  sample: AttestedSample;
  purpose: CapturePurpose;
  publicKey: KeyObject;
  now: number;
  freshnessMs?: number;
}): CaptureCheck {
  const { attestation: att, sample } = input;
  if (!att) return { ok: false, why: 'missing', message: 'the capture carries no attestation' };
  if (sample.liveness === undefined)
    return { ok: false, why: 'liveness_missing', message: 'liveness is required in an attested capture' };
  if (sample.quality === undefined)
    return { ok: false, why: 'malformed', message: 'quality is required in an attested capture' };
  const capturedAt = Date.parse(att.captured_at);
  let claims: CaptureClaims;
  let bytes: Buffer;
  try {
    claims = {
      purpose: input.purpose,
      deviceId: att.device_id,
      subject: att.subject,
      nonce: att.nonce ?? '',
      template: sample.template,
      hand: sample.hand,
      quality: sample.quality,
      liveness: sample.liveness,
      capturedAt,
      counter: att.counter,
    };
    bytes = captureBytes(claims);
  } catch (err) {
    return { ok: false, why: 'malformed', message: err instanceof Error ? err.message : String(err) };
  }
  let valid = false;
  try {
    valid = verify(null, bytes, input.publicKey, Buffer.from(att.signature, 'base64url'));
  } catch {
    valid = false;
  }
  if (!valid) return { ok: false, why: 'signature', message: 'the capture signature does not verify' };
  const skew = Math.abs(input.now - capturedAt);
  if (skew > (input.freshnessMs ?? CAPTURE_FRESHNESS_MS))
    return {
      ok: false,
      why: 'stale',
      message: `captured_at is ${Math.round(skew / 1000)} s from the server clock`,
    };
  return { ok: true, claims };
}
