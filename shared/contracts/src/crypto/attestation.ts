import { createHash, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto';
import { z } from 'zod';

/**
 * Verified attributes (docs/zk-proofs.md, "Verified attributes"): a registered verifier (KYC provider, government ID
 * service, membership organisation, health authority) signs an attestation about one user; the service
 * checks it before storing the value and records the issuer.
 *
 * Format: a compact JWS (RFC 7515) with EdDSA/Ed25519 (RFC 8037), `typ: palmid-attestation+jwt`:
 *   header  {alg: "EdDSA", typ, kid}
 *   payload {iss: verifier_id, sub: user_id, attr: {name, value}, iat, nbf?, exp}   (NumericDate seconds)
 * so any JOSE library can produce one; the signature covers the exact bytes, no canonicalisation.
 */

export const ATTESTATION_TYP = 'palmid-attestation+jwt';

/** Value type of each verified attribute (docs/attributes.md, "Catalogue"). */
export const VERIFIED_ATTRIBUTES = {
  age_verified: 'boolean',
  identity_verified: 'boolean',
  membership_status: 'string',
  vaccination_status: 'string',
} as const;
export type VerifiedAttributeName = keyof typeof VERIFIED_ATTRIBUTES;
export type VerifiedValue = boolean | string;

export const isVerifiedAttribute = (name: string): name is VerifiedAttributeName =>
  Object.hasOwn(VERIFIED_ATTRIBUTES, name);

/** A verifier registered with the service (admin `verifier create`). */
export interface TrustedVerifier {
  readonly verifierId: string;
  /** Ed25519 public key as a JWK; its RFC 7638 thumbprint is the `kid`. */
  readonly publicKey: { readonly kty: 'OKP'; readonly crv: 'Ed25519'; readonly x: string };
  /** Attribute names this verifier may attest. */
  readonly attributes: readonly VerifiedAttributeName[];
  /** A revoked verifier's attestations are refused from this instant on (ISO 8601). */
  readonly revokedAt?: string;
}

export interface VerifierSigningKey {
  readonly verifierId: string;
  readonly privateKey: KeyObject;
  readonly publicKey: TrustedVerifier['publicKey'];
  readonly kid: string;
}

export interface Attestation {
  readonly issuer: string;
  readonly kid: string;
  readonly subject: string;
  readonly attribute: VerifiedAttributeName;
  readonly value: VerifiedValue;
  readonly issuedAt: Date;
  readonly validFrom?: Date;
  readonly validUntil: Date;
}

export type AttestationFailure =
  | 'malformed' // not a compact JWS with the expected header and claims
  | 'unsupported_algorithm'
  | 'unknown_issuer' // no registered verifier with this id, or its key is not the one that signed
  | 'revoked_issuer'
  | 'bad_signature'
  | 'wrong_subject' // about another user
  | 'attribute_not_allowed' // the verifier may not attest this attribute, or the value has the wrong type
  | 'not_yet_valid' // nbf in the future, or iat in the future beyond the clock leeway
  | 'expired';

export type AttestationResult =
  | { readonly ok: true; readonly attestation: Attestation }
  | { readonly ok: false; readonly reason: AttestationFailure; readonly detail: string };

/** RFC 7638 JWK thumbprint of an Ed25519 key (base64url SHA-256 of the canonical members). */
export function jwkThumbprint(jwk: TrustedVerifier['publicKey']): string {
  const canonical = `{"crv":"Ed25519","kty":"OKP","x":"${jwk.x}"}`;
  return createHash('sha256').update(canonical).digest('base64url');
}

export function generateVerifierKey(verifierId: string): VerifierSigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const x = publicKey.export({ format: 'jwk' }).x ?? '';
  const jwk = { kty: 'OKP', crv: 'Ed25519', x } as const;
  return { verifierId, privateKey, publicKey: jwk, kid: jwkThumbprint(jwk) };
}

const b64json = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64url');
const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

/** Issues an attestation (used by verifiers' tooling, the admin CLI and tests). */
export function createAttestation(
  key: VerifierSigningKey,
  claims: {
    subject: string;
    attribute: VerifiedAttributeName;
    value: VerifiedValue;
    validUntil: Date;
    validFrom?: Date;
    issuedAt?: Date;
  },
): string {
  const header = { alg: 'EdDSA', typ: ATTESTATION_TYP, kid: key.kid };
  const payload = {
    iss: key.verifierId,
    sub: claims.subject,
    attr: { name: claims.attribute, value: claims.value },
    iat: seconds(claims.issuedAt ?? new Date()),
    ...(claims.validFrom ? { nbf: seconds(claims.validFrom) } : {}),
    exp: seconds(claims.validUntil),
  };
  const signingInput = `${b64json(header)}.${b64json(payload)}`;
  return `${signingInput}.${sign(null, Buffer.from(signingInput), key.privateKey).toString('base64url')}`;
}

const HeaderSchema = z.object({ alg: z.string(), typ: z.literal(ATTESTATION_TYP), kid: z.string().min(1) });
const numericDate = z.number().int().nonnegative();
const PayloadSchema = z.object({
  iss: z.string().min(1),
  sub: z.string().min(1),
  attr: z.object({ name: z.string(), value: z.union([z.boolean(), z.string().max(256)]) }),
  iat: numericDate,
  nbf: numericDate.optional(),
  exp: numericDate,
});

/** Clock leeway for `iat`/`nbf`/`exp` between the verifier's clock and ours. */
export const ATTESTATION_LEEWAY_S = 60;

function decodePart(part: string): unknown {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}

/**
 * Checks an attestation before it is stored: format, algorithm, a registered and unrevoked issuer
 * whose key signed it, the signature, the subject, the attribute the issuer may attest and its value
 * type, and the validity window at `now`.
 */
export function verifyAttestation(
  token: string,
  trustedVerifiers: Iterable<TrustedVerifier>,
  now: Date,
  expect: { subject: string; attribute?: string },
): AttestationResult {
  const fail = (reason: AttestationFailure, detail: string): AttestationResult => ({
    ok: false,
    reason,
    detail,
  });
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) {
    return fail('malformed', 'not a compact JWS');
  }
  const [h, p, s] = parts as [string, string, string];
  let header: z.infer<typeof HeaderSchema>;
  let payload: z.infer<typeof PayloadSchema>;
  try {
    const hp = HeaderSchema.safeParse(decodePart(h));
    if (!hp.success) return fail('malformed', 'header');
    header = hp.data;
    if (header.alg !== 'EdDSA') return fail('unsupported_algorithm', header.alg);
    const pp = PayloadSchema.safeParse(decodePart(p));
    if (!pp.success) return fail('malformed', `claims: ${pp.error.issues[0]?.path.join('.') ?? ''}`);
    payload = pp.data;
  } catch {
    return fail('malformed', 'header or payload is not base64url JSON');
  }

  // A verifier may be registered with several keys (rotation): the header's kid picks one.
  const candidates = [...trustedVerifiers].filter((v) => v.verifierId === payload.iss);
  if (candidates.length === 0) return fail('unknown_issuer', `no registered verifier ${payload.iss}`);
  const verifier = candidates.find((v) => jwkThumbprint(v.publicKey) === header.kid);
  if (!verifier) return fail('unknown_issuer', `key ${header.kid} is not registered for ${payload.iss}`);
  let signatureOk = false;
  try {
    const key = createPublicKey({ key: { ...verifier.publicKey }, format: 'jwk' });
    signatureOk = verify(null, Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url'));
  } catch {
    signatureOk = false;
  }
  if (!signatureOk) return fail('bad_signature', 'signature does not verify with the registered key');
  const nowS = seconds(now);
  if (verifier.revokedAt !== undefined && seconds(new Date(verifier.revokedAt)) <= nowS) {
    return fail('revoked_issuer', `${payload.iss} revoked at ${verifier.revokedAt}`);
  }

  if (payload.sub !== expect.subject) return fail('wrong_subject', 'attestation is about another user');
  const name = payload.attr.name;
  if (!isVerifiedAttribute(name) || !verifier.attributes.includes(name)) {
    return fail('attribute_not_allowed', `${payload.iss} may not attest ${name}`);
  }
  if (expect.attribute !== undefined && name !== expect.attribute) {
    return fail('attribute_not_allowed', `attestation is about ${name}, not ${expect.attribute}`);
  }
  if (typeof payload.attr.value !== VERIFIED_ATTRIBUTES[name]) {
    return fail('attribute_not_allowed', `${name} must be a ${VERIFIED_ATTRIBUTES[name]}`);
  }

  if (payload.iat > nowS + ATTESTATION_LEEWAY_S) return fail('not_yet_valid', 'issued in the future');
  if (payload.nbf !== undefined && payload.nbf > nowS + ATTESTATION_LEEWAY_S) {
    return fail('not_yet_valid', `valid from ${new Date(payload.nbf * 1000).toISOString()}`);
  }
  if (payload.exp <= nowS - ATTESTATION_LEEWAY_S) {
    return fail('expired', `expired at ${new Date(payload.exp * 1000).toISOString()}`);
  }

  return {
    ok: true,
    attestation: {
      issuer: payload.iss,
      kid: header.kid,
      subject: payload.sub,
      attribute: name,
      value: payload.attr.value,
      issuedAt: new Date(payload.iat * 1000),
      ...(payload.nbf !== undefined ? { validFrom: new Date(payload.nbf * 1000) } : {}),
      validUntil: new Date(payload.exp * 1000),
    },
  };
}
