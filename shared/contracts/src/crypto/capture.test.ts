import { createPrivateKey, createPublicKey } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  attestCapture,
  type CaptureClaims,
  CaptureEncodingError,
  captureAttestationSchema,
  captureBytes,
  generateDeviceKey,
  publicKeyFromString,
  publicKeyToString,
  verifyCapture,
} from './capture.ts';

// A fixed key (seed 0x07 × 32) so the signature is a test vector too: Ed25519 is deterministic.
const SEED = Buffer.alloc(32, 7);
const PRIVATE = createPrivateKey({
  key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), SEED]),
  format: 'der',
  type: 'pkcs8',
});
const PUBLIC = createPublicKey(PRIVATE);

const CLAIMS: CaptureClaims = {
  purpose: 'identify',
  deviceId: '11111111-2222-4333-8444-555555555555',
  subject: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
  nonce: 'AAECAwQFBgcICQoLDA0ODw',
  template: new Uint8Array([1, 2, 3]),
  hand: 'right',
  quality: 0.75,
  liveness: 0.5,
  capturedAt: 1_795_000_000_000,
  counter: 42,
};

describe('capture attestation: canonical bytes (byte-exact)', () => {
  it('lays the fields out as docs/security.md documents', () => {
    const expected = [
      Buffer.from('PALMID-CAPTURE-1', 'ascii').toString('hex'),
      '01', // identify
      '11111111222243338444555555555555', // device id
      'aaaaaaaabbbb4ccc8dddeeeeeeeeeeee', // subject
      '10', // nonce length 16
      '000102030405060708090a0b0c0d0e0f', // nonce
      '039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81', // SHA-256(01 02 03)
      '02', // right
      '3fe8000000000000', // 0.75
      '3fe0000000000000', // 0.5
      '000001a1ee565e00', // 1 795 000 000 000 ms
      '000000000000002a', // counter 42
    ].join('');
    expect(captureBytes(CLAIMS).toString('hex')).toBe(expected);
  });

  it('encodes the direct path (no nonce, no hand) and a report without a template', () => {
    const b = captureBytes({ ...CLAIMS, purpose: 'direct', nonce: '', hand: undefined, template: undefined });
    expect(b.length).toBe(115);
    expect(b[16]).toBe(3);
    expect(b[49]).toBe(0);
    // SHA-256 of the empty string
    expect(b.subarray(50, 82).toString('hex')).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
    expect(b[82]).toBe(0);
  });

  it('encodes the vendor registration path as purpose byte 4, otherwise as the direct path', () => {
    const direct = captureBytes({ ...CLAIMS, purpose: 'direct', nonce: '' });
    const register = captureBytes({ ...CLAIMS, purpose: 'register', nonce: '' });
    expect(register[16]).toBe(4);
    expect(register.length).toBe(direct.length);
    expect(Buffer.concat([register.subarray(0, 16), register.subarray(17)])).toEqual(
      Buffer.concat([direct.subarray(0, 16), direct.subarray(17)]),
    );
  });

  it('signs deterministically (pinned Ed25519 vector) and the raw public key is base64url', () => {
    const att = attestCapture({ privateKey: PRIVATE, ...CLAIMS });
    expect(publicKeyToString(PUBLIC)).toBe('6kpsY-KcUgq-9VB7Ey7F-ZVHdq6-vnuSQh7qaRRG0iw');
    expect(att).toEqual({
      device_id: CLAIMS.deviceId,
      subject: CLAIMS.subject,
      nonce: CLAIMS.nonce,
      captured_at: '2026-11-18T11:06:40.000Z',
      counter: 42,
      signature: 'uk3Ceoggtk3bqZxWLKLSEbmfTfEtMg_FY2tfTb4SN35fNvZRdLcsu323ZIKPCNMyVclRDWMrR3EB38ZuRjMnBw',
    });
    expect(captureAttestationSchema.safeParse(att).success).toBe(true);
  });

  it('refuses claims it cannot encode', () => {
    expect(() => captureBytes({ ...CLAIMS, quality: 1.5 })).toThrow(CaptureEncodingError);
    expect(() => captureBytes({ ...CLAIMS, liveness: Number.NaN })).toThrow(CaptureEncodingError);
    expect(() => captureBytes({ ...CLAIMS, subject: 'not-a-uuid' })).toThrow(CaptureEncodingError);
    expect(() => captureBytes({ ...CLAIMS, nonce: 'A'.repeat(100) })).toThrow(CaptureEncodingError);
    expect(() => captureBytes({ ...CLAIMS, counter: -1 })).toThrow(CaptureEncodingError);
    expect(() => publicKeyFromString('short')).toThrow(CaptureEncodingError);
  });
});

describe('capture attestation: verifier', () => {
  const sample = { template: CLAIMS.template, hand: CLAIMS.hand, quality: 0.75, liveness: 0.5 };
  const att = attestCapture({ privateKey: PRIVATE, ...CLAIMS });
  const check = (over: Partial<Parameters<typeof verifyCapture>[0]> = {}) =>
    verifyCapture({
      attestation: att,
      sample,
      purpose: 'identify',
      publicKey: publicKeyFromString(publicKeyToString(PUBLIC)),
      now: CLAIMS.capturedAt + 1000,
      ...over,
    });

  it('accepts the capture it signed', () => {
    const r = check();
    expect(r.ok).toBe(true);
  });

  it('refuses a missing attestation, missing liveness, another key, another purpose, a stale capture', () => {
    expect(check({ attestation: undefined })).toMatchObject({ ok: false, why: 'missing' });
    expect(check({ sample: { ...sample, liveness: undefined } })).toMatchObject({
      ok: false,
      why: 'liveness_missing',
    });
    expect(check({ publicKey: generateDeviceKey().publicKey })).toMatchObject({
      ok: false,
      why: 'signature',
    });
    expect(check({ purpose: 'enroll' })).toMatchObject({ ok: false, why: 'signature' });
    expect(check({ now: CLAIMS.capturedAt + 61_000 })).toMatchObject({ ok: false, why: 'stale' });
    expect(check({ now: CLAIMS.capturedAt - 61_000 })).toMatchObject({ ok: false, why: 'stale' });
    expect(check({ now: CLAIMS.capturedAt + 59_000 }).ok).toBe(true);
  });

  it('any change to a signed field breaks the signature (property)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.record({ template: fc.uint8Array({ minLength: 1, maxLength: 64 }) }),
          fc.record({ hand: fc.constantFrom<'left' | undefined>('left', undefined) }),
          fc.record({ quality: fc.double({ min: 0, max: 1, noNaN: true }) }),
          fc.record({ liveness: fc.double({ min: 0, max: 1, noNaN: true }) }),
        ),
        (change) => {
          const changed = { ...sample, ...change };
          fc.pre(
            JSON.stringify({ ...changed, template: [...(changed.template ?? [])] }) !==
              JSON.stringify({ ...sample, template: [...CLAIMS.template!] }),
          );
          expect(check({ sample: changed })).toMatchObject({ ok: false, why: 'signature' });
        },
      ),
      { numRuns: 200 },
    );
    for (const over of [
      { counter: 43 },
      { subject: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeef' },
      { device_id: '11111111-2222-4333-8444-555555555556' },
      { nonce: 'AAECAwQFBgcICQoLDA0OEA' },
      { captured_at: '2026-11-18T11:06:40.001Z' },
    ])
      expect(check({ attestation: { ...att, ...over } })).toMatchObject({ ok: false, why: 'signature' });
  });
});
