import { randomBytes, timingSafeEqual } from 'node:crypto';
import {
  type AttestedSample,
  CAPTURE_FRESHNESS_MS,
  type CaptureAttestation,
  type CapturePurpose,
  publicKeyFromString,
  verifyCapture,
} from '@palmid/contracts/crypto/capture';
import { AppError } from '@palmid/contracts/errors';
import type { AppContext, Caller } from '../../context.ts';
import { hashSecret, newSecret, safeEqualHex } from '../../crypto/secrets.ts';
import type { Db } from '../../db/index.ts';
import { appendAudit } from '../audit/service.ts';
import { deviceStore } from './store.ts';

/**
 * Capture devices and their attestations (docs/security.md "Attested captures"). A device (a kiosk's agent
 * or an integrator's capture host) is registered with `admin pvs create`, which prints a one-time
 * provisioning secret; the device's first `hello` with that secret binds the Ed25519 public key it made.
 * Every capture it sends is signed (shared/contracts/src/crypto/capture.ts) and checked here before the
 * template reaches the matcher.
 */

export const PROVISIONING_PREFIX = 'prov_';
/** How long an enrolment nonce (enroll.begin) stays valid: capturing several samples takes a while. */
export const ENROLMENT_NONCE_TTL_MS = 10 * 60_000;

export type DeviceKeyState = 'bound' | 'unbound';

/** Issues a (new) one-time provisioning secret; a key bound before is dropped (`admin pvs rekey`). */
export async function newProvisioningSecret(db: Db, pvsId: string, now: number): Promise<string> {
  const secret = newSecret(PROVISIONING_PREFIX);
  await deviceStore(db).resetKey(pvsId, hashSecret(secret), now);
  return secret;
}

/**
 * The key part of `hello`: binds the presented public key when the provisioning secret is given and still
 * unused; refuses a key other than the bound one. A hello without a key (or without the secret, before
 * binding) is accepted, but nothing that device captures is believed until a key is bound.
 */
export async function bindOnHello(
  db: Db,
  pvsId: string,
  deviceKey: { public_key: string; provisioning_secret?: string | undefined } | undefined,
  now: number,
): Promise<DeviceKeyState> {
  const row = await deviceStore(db).loadKey(pvsId);
  if (deviceKey) {
    try {
      publicKeyFromString(deviceKey.public_key);
    } catch {
      throw new AppError('INVALID_REQUEST', 'device_key.public_key is not an Ed25519 public key', {
        field: 'device_key.public_key',
        reason: 'malformed',
      });
    }
  }
  if (row?.public_key) {
    if (deviceKey && deviceKey.public_key !== row.public_key)
      throw new AppError('FORBIDDEN', 'Another device key is registered for this kiosk (admin pvs rekey)', {
        field: 'device_key.public_key',
        reason: 'device_key_mismatch',
      });
    return 'bound';
  }
  if (!deviceKey?.provisioning_secret) return 'unbound';
  const hash = hashSecret(deviceKey.provisioning_secret);
  const valid =
    row?.provisioning_hash != null &&
    safeEqualHex(row.provisioning_hash, hash) &&
    (await deviceStore(db).bindKey(pvsId, hash, deviceKey.public_key, now));
  if (!valid)
    throw new AppError('FORBIDDEN', 'The provisioning secret is invalid or already used (admin pvs rekey)', {
      field: 'device_key.provisioning_secret',
      reason: 'provisioning_secret_invalid',
    });
  return 'bound';
}

export async function deviceKeyState(db: Db, pvsId: string): Promise<DeviceKeyState> {
  return (await deviceStore(db).loadKey(pvsId))?.public_key ? 'bound' : 'unbound';
}

/**
 * The nonce of one `scan.request`: 16 random bytes and a 16-byte MAC binding them to this kiosk and this
 * auth_id under a key derived from the master key, so no write is needed to issue it (it is on every
 * context's path) and every instance can check it. It is single-use because the context is: the first
 * identify that carries it resolves the context, which never resolves again.
 */
export function scanNonce(ctx: AppContext, pvsId: string, authId: string): string {
  const r = randomBytes(16);
  return Buffer.concat([r, scanNonceMac(ctx, pvsId, authId, r)]).toString('base64url');
}

function scanNonceMac(ctx: AppContext, pvsId: string, authId: string, r: Buffer): Buffer {
  return Buffer.from(
    ctx.keyring.mac('capture-nonce', `identify:${pvsId}:${authId}:${r.toString('hex')}`),
    'hex',
  ).subarray(0, 16);
}

function validScanNonce(ctx: AppContext, pvsId: string, authId: string, nonce: string): boolean {
  const bytes = Buffer.from(nonce, 'base64url');
  if (bytes.length !== 32) return false;
  return timingSafeEqual(bytes.subarray(16), scanNonceMac(ctx, pvsId, authId, bytes.subarray(0, 16)));
}

/**
 * At most this many stored nonces per device are open (neither used nor expired) at once: a kiosk has one
 * enrolment in progress at a time, so a burst of `enroll.begin` cannot fill the table (docs/security.md).
 */
export const MAX_OPEN_NONCES = 5;

/**
 * A fresh single-use nonce for one enrolment (enroll.begin), stored until used or expired. A device that
 * already holds MAX_OPEN_NONCES open ones is refused (429 `too_many_open_nonces`).
 */
export async function issueNonce(
  db: Db,
  q: { pvsId: string; purpose: CapturePurpose; subject: string; expiresAt: number },
  now: number,
): Promise<string> {
  if ((await deviceStore(db).countOpenNonces(q.pvsId, now)) >= MAX_OPEN_NONCES)
    throw new AppError('RATE_LIMITED', 'Too many enrolments begun and not finished on this device', {
      reason: 'too_many_open_nonces',
      retry_after_s: Math.ceil(ENROLMENT_NONCE_TTL_MS / 1000),
    });
  const nonce = randomBytes(16).toString('base64url');
  await deviceStore(db).insertNonce(
    { nonce, pvs_id: q.pvsId, purpose: q.purpose, subject: q.subject, expires_at: q.expiresAt },
    now,
  );
  return nonce;
}

export type CaptureFailure =
  | 'missing'
  | 'malformed'
  | 'liveness_missing'
  | 'signature'
  | 'stale'
  | 'unknown_device'
  | 'other_vendor'
  | 'no_key'
  | 'wrong_device'
  | 'subject'
  | 'nonce'
  | 'counter';

export type CaptureVerdict =
  | {
      ok: true;
      deviceId: string;
      /** counters of the capture, still to be accepted by `settleAttestation` (in the resolving transaction) */
      pending?: { lowest: number; highest: number };
    }
  | { ok: false; deviceId: string | null; why: CaptureFailure; message: string };

export interface AttestedCapture extends AttestedSample {
  attestation?: CaptureAttestation | undefined;
}

export interface CaptureQuery {
  purpose: CapturePurpose;
  /** The device the capture must come from (the socket's kiosk); undefined: the one the attestation names. */
  deviceId?: string | undefined;
  /**
   * Direct path: the device must be registered to this vendor; `device` looks it up (the pvs module owns
   * that table: the caller passes its lookup).
   */
  vendorId?: string | undefined;
  device?: (deviceId: string) => Promise<{ vendorId: string | null; revoked: boolean } | undefined>;
  /** The auth_id (identify) the capture must be for; enrolment ids come with their nonce. */
  subject?: string | undefined;
  /** One capture, or an enrolment's samples (one nonce, increasing counters). */
  samples: AttestedCapture[];
}

/**
 * Verifies a capture's attestation: signature with the device's registered key, freshness of captured_at,
 * and the nonce (a scan.request's: its MAC for this kiosk and auth_id; an enrolment's: consumed here).
 * The counter is checked last, by `settleAttestation`: for `identify` and `direct` inside the transaction
 * that resolves the context (no commit of its own on the hot path), for `enroll` here.
 */
export async function checkAttestation(ctx: AppContext, q: CaptureQuery): Promise<CaptureVerdict> {
  const named = q.samples[0]?.attestation?.device_id ?? null;
  const deviceId = q.deviceId ?? named;
  const fail = (why: CaptureFailure, message: string): CaptureVerdict => ({
    ok: false,
    deviceId,
    why,
    message,
  });
  if (!deviceId) return fail('missing', 'the capture carries no attestation');
  const db = ctx.database.db;
  const now = ctx.now();
  if (q.samples.length === 0) return fail('missing', 'no capture');
  if (q.vendorId !== undefined) {
    const device = await q.device?.(deviceId);
    if (!device || device.revoked) return fail('unknown_device', 'the capture device is not registered');
    if (device.vendorId !== q.vendorId)
      return fail('other_vendor', 'the capture device is not registered to this vendor');
  }
  const key = await deviceStore(db).loadKey(deviceId);
  if (!key?.public_key) return fail('no_key', 'the capture device has no registered key');
  const publicKey = publicKeyFromString(key.public_key);
  const first = q.samples[0]!.attestation;
  let previous = 0;
  // An enrolment's samples are captured one after another after enroll.begin: they may be older than 60 s,
  // and are bounded instead by the enrolment nonce (checked below against its issue time).
  const freshnessMs =
    q.purpose === 'enroll' ? ENROLMENT_NONCE_TTL_MS + CAPTURE_FRESHNESS_MS : CAPTURE_FRESHNESS_MS;
  for (const s of q.samples) {
    const r = verifyCapture({
      attestation: s.attestation,
      sample: s,
      purpose: q.purpose,
      publicKey,
      now,
      freshnessMs,
    });
    if (!r.ok) return fail(r.why, r.message);
    const a = s.attestation!;
    if (a.device_id !== deviceId) return fail('wrong_device', 'the capture is attested by another device');
    if (a.subject !== first!.subject || (a.nonce ?? '') !== (first!.nonce ?? ''))
      return fail('subject', 'the samples of one request must share subject and nonce');
    if (a.counter <= previous) return fail('counter', 'the device counter does not increase');
    previous = a.counter;
  }
  // A replayed capture is refused here already, before matching; the compare-and-set in
  // `settleAttestation` closes the race between two uses of one capture.
  if (first!.counter <= key.last_counter)
    return fail('counter', 'the device counter does not increase (replayed capture?)');
  const subject = first!.subject;
  if (q.subject !== undefined && subject !== q.subject)
    return fail('subject', 'the capture was attested for another request');
  if (q.purpose === 'identify') {
    if (!first!.nonce || !validScanNonce(ctx, deviceId, subject, first!.nonce))
      return fail('nonce', 'the nonce was not issued to this kiosk for this context');
  } else if (q.purpose === 'enroll') {
    if (!first!.nonce) return fail('nonce', 'the capture carries no server nonce');
    const expiresAt = await deviceStore(db).consumeNonce(
      { nonce: first!.nonce, pvsId: deviceId, purpose: q.purpose, subject },
      now,
    );
    if (expiresAt === undefined)
      return fail('nonce', 'the nonce is unknown, expired, for another request or already used');
    const issuedAt = expiresAt - ENROLMENT_NONCE_TTL_MS;
    for (const s of q.samples) {
      const at = Date.parse(s.attestation!.captured_at);
      if (at < issuedAt - CAPTURE_FRESHNESS_MS || at > now + CAPTURE_FRESHNESS_MS)
        return fail('stale', 'a sample was captured before its enrolment began');
    }
  } else if (first!.nonce) return fail('nonce', 'the direct and register paths have no server nonce');
  const verdict: CaptureVerdict = {
    ok: true,
    deviceId,
    pending: { lowest: first!.counter, highest: previous },
  };
  // Enrolments and registrations act on the capture outside a resolving transaction: counted at once.
  return q.purpose === 'enroll' || q.purpose === 'register'
    ? ((await settleAttestation(db, verdict, now)) ?? verdict)
    : verdict;
}

/**
 * Accepts the capture's counters (compare-and-set: above the last accepted, on every instance) or turns
 * the verdict into a `counter` failure (a replayed capture). Run it in the transaction that acts on the
 * capture, so the counter moves exactly when the capture is used.
 */
export async function settleAttestation(
  db: Db,
  verdict: CaptureVerdict | undefined,
  now: number,
): Promise<CaptureVerdict | undefined> {
  if (!verdict?.ok || !verdict.pending) return verdict;
  const { lowest, highest } = verdict.pending;
  if (!(await deviceStore(db).advanceCounter(verdict.deviceId, lowest, highest, now)))
    return {
      ok: false,
      deviceId: verdict.deviceId,
      why: 'counter',
      message: 'the device counter does not increase (replayed capture?)',
    };
  return { ok: true, deviceId: verdict.deviceId };
}

/** Records a refused capture in the audit log (no user is known: the row is filed under the device). */
export async function auditAttestationFailure(
  ctx: AppContext,
  db: Db,
  caller: Caller,
  verdict: Extract<CaptureVerdict, { ok: false }>,
  vendorId: string | null,
  now: number,
): Promise<void> {
  await appendAudit(
    db,
    ctx.keyring,
    caller,
    [
      {
        userId: `device:${verdict.deviceId ?? 'unknown'}`,
        vendorId,
        attributeName: 'capture_attestation',
        operation: 'READ',
        result: 'DENIED',
      },
    ],
    now,
  );
}
