import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  createAttestation,
  generateVerifierKey,
  jwkThumbprint,
  type TrustedVerifier,
  type VerifierSigningKey,
  verifyAttestation,
} from './attestation.ts';

const NOW = new Date('2026-11-23T10:00:00Z');
const DAY = 86_400_000;
const USER = '1d3c5e7a-2b4f-4a6c-8e0d-123456789abc';

const kyc = generateVerifierKey('ver_kyc');
const registry = (key: VerifierSigningKey, extra: Partial<TrustedVerifier> = {}): TrustedVerifier[] => [
  {
    verifierId: key.verifierId,
    publicKey: key.publicKey,
    attributes: ['identity_verified', 'age_verified'],
    ...extra,
  },
];
const attest = (overrides: Partial<Parameters<typeof createAttestation>[1]> = {}, key = kyc) =>
  createAttestation(key, {
    subject: USER,
    attribute: 'identity_verified',
    value: true,
    issuedAt: NOW,
    validUntil: new Date(NOW.getTime() + 365 * DAY),
    ...overrides,
  });

describe('verified-attribute attestations', () => {
  it('accepts a well-formed attestation from a registered verifier and reports the issuer', () => {
    const result = verifyAttestation(attest(), registry(kyc), NOW, {
      subject: USER,
      attribute: 'identity_verified',
    });
    expect(result).toEqual({
      ok: true,
      attestation: {
        issuer: 'ver_kyc',
        kid: kyc.kid,
        subject: USER,
        attribute: 'identity_verified',
        value: true,
        issuedAt: NOW,
        validUntil: new Date(NOW.getTime() + 365 * DAY),
      },
    });
  });

  it('refuses an expired attestation and one not valid yet', () => {
    const expired = attest({
      issuedAt: new Date(NOW.getTime() - 30 * DAY),
      validUntil: new Date(NOW.getTime() - DAY),
    });
    expect(verifyAttestation(expired, registry(kyc), NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'expired',
    });
    const future = attest({ validFrom: new Date(NOW.getTime() + DAY) });
    expect(verifyAttestation(future, registry(kyc), NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'not_yet_valid',
    });
    // The same attestation is fine a day later.
    expect(
      verifyAttestation(future, registry(kyc), new Date(NOW.getTime() + 2 * DAY), { subject: USER }).ok,
    ).toBe(true);
  });

  it('refuses an attestation about another user', () => {
    expect(verifyAttestation(attest(), registry(kyc), NOW, { subject: 'someone-else' })).toMatchObject({
      ok: false,
      reason: 'wrong_subject',
    });
  });

  it('refuses unknown issuers, impostor keys and revoked verifiers', () => {
    const rogue = generateVerifierKey('ver_rogue');
    expect(verifyAttestation(attest({}, rogue), registry(kyc), NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'unknown_issuer',
    });
    // A key claiming a registered verifier's id.
    const impostor = { ...generateVerifierKey('ver_kyc') };
    expect(verifyAttestation(attest({}, impostor), registry(kyc), NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'unknown_issuer',
    });
    // Even with the registered kid in the header, the signature gives it away.
    const stolenKid = { ...impostor, kid: kyc.kid };
    expect(verifyAttestation(attest({}, stolenKid), registry(kyc), NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
    const revoked = registry(kyc, { revokedAt: new Date(NOW.getTime() - DAY).toISOString() });
    expect(verifyAttestation(attest(), revoked, NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'revoked_issuer',
    });
  });

  it('accepts attestations under any registered key of a verifier (key rotation)', () => {
    const next = { ...generateVerifierKey('ver_kyc') };
    const both = [...registry(kyc), ...registry(next)];
    expect(verifyAttestation(attest({}, next), both, NOW, { subject: USER }).ok).toBe(true);
    expect(verifyAttestation(attest({}, kyc), both, NOW, { subject: USER }).ok).toBe(true);
  });

  it('refuses a tampered payload', () => {
    const [h, p, s] = attest().split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    claims.sub = 'someone-else';
    const forged = `${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`;
    expect(verifyAttestation(forged, registry(kyc), NOW, { subject: 'someone-else' })).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('refuses attributes the verifier may not attest and values of the wrong type', () => {
    const membership = attest({ attribute: 'membership_status', value: 'gold' });
    expect(verifyAttestation(membership, registry(kyc), NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'attribute_not_allowed',
    });
    const stringly = attest({ attribute: 'age_verified', value: 'yes' });
    expect(verifyAttestation(stringly, registry(kyc), NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'attribute_not_allowed',
    });
    expect(
      verifyAttestation(attest(), registry(kyc), NOW, { subject: USER, attribute: 'age_verified' }),
    ).toMatchObject({
      ok: false,
      reason: 'attribute_not_allowed',
    });
  });

  it('refuses other algorithms and garbage', () => {
    const header = Buffer.from(
      JSON.stringify({ alg: 'none', typ: 'palmid-attestation+jwt', kid: kyc.kid }),
    ).toString('base64url');
    const [, p] = attest().split('.') as [string, string];
    expect(verifyAttestation(`${header}.${p}.AAAA`, registry(kyc), NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'unsupported_algorithm',
    });
    expect(verifyAttestation('not.a.jws!', registry(kyc), NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'malformed',
    });
    expect(verifyAttestation('e30.e30.AAAA', registry(kyc), NOW, { subject: USER })).toMatchObject({
      ok: false,
      reason: 'malformed',
    });
  });

  it('computes RFC 7638 thumbprints (RFC 8037 test vector)', () => {
    const x = '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo';
    expect(jwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x })).toBe(
      'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k',
    );
  });

  it('accepts a token made by other Ed25519 JWS tooling', () => {
    // A verifier signing with its own tooling (plain node:crypto here; the bytes are those of any JOSE library).
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const jwk = { kty: 'OKP', crv: 'Ed25519', x: publicKey.export({ format: 'jwk' }).x ?? '' } as const;
    const trusted: TrustedVerifier[] = [
      { verifierId: 'ver_health', publicKey: jwk, attributes: ['vaccination_status'] },
    ];
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const input = `${b64({ alg: 'EdDSA', typ: 'palmid-attestation+jwt', kid: jwkThumbprint(jwk) })}.${b64({
      iss: 'ver_health',
      sub: USER,
      attr: { name: 'vaccination_status', value: 'complete' },
      iat: NOW.getTime() / 1000,
      exp: NOW.getTime() / 1000 + 3600,
    })}`;
    const token = `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}`;
    expect(verifyAttestation(token, trusted, NOW, { subject: USER })).toMatchObject({
      ok: true,
      attestation: { issuer: 'ver_health', attribute: 'vaccination_status', value: 'complete' },
    });
  });
});
