import { timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { AppError } from '@palmid/contracts/errors';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  errors,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';

/**
 * Identity-provider import (docs/zk-proofs.md, "Identity-provider import"): an OpenID Connect ID token from a configured issuer is
 * verified with jose (signature against the issuer's JWKS, iss, aud, exp/nbf/iat, nonce) and mapped to
 * palmid attributes. Verified identity data is taken from OpenID Connect for Identity Assurance
 * `verified_claims` when present.
 */

export interface OidcIssuerConfig {
  /** Exact `iss` value. */
  readonly issuer: string;
  /** Our client id(s) at that issuer: the token's `aud` must contain one. */
  readonly audience: string | readonly string[];
  /** The issuer's keys: a JWKS object, an `https://` URL (`http://` on loopback only), or a JWKS file path. */
  readonly jwks: JSONWebKeySet | URL | string;
  /** Accepted signature algorithms (default RS256, PS256, ES256, EdDSA; never `none` or HMAC). */
  readonly algorithms?: readonly string[];
  /** Allowed clock difference in seconds (default 60). */
  readonly clockToleranceS?: number;
  /** Refuse tokens issued longer ago than this (seconds, default 600): imports happen right after login. */
  readonly maxTokenAgeS?: number;
}

export interface VerifyIdTokenOptions extends OidcIssuerConfig {
  /** The nonce sent in the authentication request; required to match when given. */
  readonly nonce?: string;
  readonly now?: Date;
}

/** Attributes an ID token can yield (docs/user-api.md, `POST /v1/attributes/import`); absent claims are absent here. */
export interface ImportedAttributes {
  email?: string;
  email_verified?: boolean;
  name?: string;
  legal_name?: string;
  date_of_birth?: string;
  identity_verified?: boolean;
}

export type OidcFailure =
  | 'malformed' // not a JWS/JWT, or required claims (sub, iat, exp) missing or ill-typed
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'unsupported_algorithm'
  | 'unknown_key' // no key in the issuer's JWKS matches the token header
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid' // nbf in the future or iat too far in the future
  | 'too_old' // iat older than maxTokenAgeS
  | 'nonce_mismatch'
  | 'jwks_unavailable';

export type IdTokenResult =
  | {
      readonly ok: true;
      readonly issuer: string;
      readonly subject: string;
      readonly attributes: ImportedAttributes;
      /** Claims present but not importable (e.g. a birthdate without a year). */
      readonly skipped: readonly string[];
    }
  | { readonly ok: false; readonly reason: OidcFailure; readonly detail: string };

const DEFAULT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];
const remoteSets = new Map<string, JWTVerifyGetKey>();

function keyGetter(jwks: OidcIssuerConfig['jwks']): JWTVerifyGetKey {
  if (typeof jwks === 'object' && !(jwks instanceof URL)) return createLocalJWKSet(jwks);
  const text = jwks.toString();
  if (jwks instanceof URL || /^https?:\/\//.test(text)) {
    // Keys over plain HTTP only from this machine (a local test IdP; config.ts allows it in development).
    const url = new URL(text);
    if (url.protocol !== 'https:' && !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname))
      throw new errors.JWKSInvalid('the JWKS URL must be https://');
    // One cached set per URL: jose refetches on unknown kids (rotation) with a cooldown.
    let set = remoteSets.get(text);
    if (!set) {
      set = createRemoteJWKSet(url, { timeoutDuration: 5000, cooldownDuration: 30_000 });
      remoteSets.set(text, set);
    }
    return set;
  }
  return createLocalJWKSet(JSON.parse(readFileSync(text, 'utf8')) as JSONWebKeySet);
}

function failure(err: unknown): { reason: OidcFailure; detail: string } {
  if (err instanceof errors.JWTExpired) {
    // jose reports an iat older than maxTokenAge as "expired" on the iat claim.
    return { reason: err.claim === 'iat' ? 'too_old' : 'expired', detail: err.message };
  }
  if (err instanceof errors.JWTClaimValidationFailed) {
    const byClaim: Record<string, OidcFailure> = {
      iss: 'wrong_issuer',
      aud: 'wrong_audience',
      nbf: 'not_yet_valid',
    };
    // An iat in the future (beyond the clock tolerance).
    if (err.claim === 'iat' && err.reason === 'check_failed')
      return { reason: 'not_yet_valid', detail: err.message };
    return { reason: byClaim[err.claim] ?? 'malformed', detail: `${err.claim}: ${err.message}` };
  }
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) {
    return { reason: 'unsupported_algorithm', detail: err.message };
  }
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) {
    return { reason: 'unknown_key', detail: err.message };
  }
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return { reason: 'bad_signature', detail: err.message };
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) {
    return { reason: 'jwks_unavailable', detail: err.message };
  }
  if (err instanceof errors.JOSEError && err.code === 'ERR_JOSE_GENERIC') {
    // Remote JWKS fetch failures (HTTP status, network) surface as generic JOSE errors.
    return { reason: 'jwks_unavailable', detail: err.message };
  }
  if (err instanceof errors.JOSEError) return { reason: 'malformed', detail: err.message };
  if (err instanceof TypeError && /fetch/i.test(err.message))
    return { reason: 'jwks_unavailable', detail: err.message };
  throw err;
}

function sameString(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** OIDC `birthdate` → `YYYY-MM-DD` when it is a full, real, past date ("0000-MM-DD" hides the year). */
function birthDate(value: unknown, now: Date): string | undefined {
  if (typeof value !== 'string') return undefined;
  const m = ISO_DATE.exec(value);
  if (!m || m[1] === '0000') return undefined;
  const t = new Date(`${value}T00:00:00Z`);
  if (Number.isNaN(t.getTime()) || t.toISOString().slice(0, 10) !== value || t > now) return undefined;
  return value;
}

const str = (v: unknown): string | undefined =>
  typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;

function bool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  // Some providers send the OIDC boolean claims as strings.
  if (v === 'true' || v === 'false') return v === 'true';
  return undefined;
}

interface VerifiedClaims {
  verification?: { trust_framework?: unknown };
  claims?: Record<string, unknown>;
}

/** Maps ID-token claims to palmid attributes. Exported for the route's tests. */
export function mapClaims(
  payload: JWTPayload,
  now: Date,
): { attributes: ImportedAttributes; skipped: string[] } {
  const attributes: ImportedAttributes = {};
  const skipped: string[] = [];
  const p = payload as Record<string, unknown>;
  const vc = (Array.isArray(p.verified_claims) ? p.verified_claims[0] : p.verified_claims) as
    | VerifiedClaims
    | undefined;
  const verified = vc?.claims && typeof vc.verification?.trust_framework === 'string' ? vc.claims : undefined;

  // A verified flag is imported only together with the value it vouches for (docs/user-api.md).
  const email = str(p.email);
  if (email !== undefined) attributes.email = email.toLowerCase();
  const emailVerified = bool(p.email_verified);
  if (emailVerified !== undefined) {
    if (email !== undefined) attributes.email_verified = emailVerified;
    else skipped.push('email_verified');
  }
  const name =
    str(p.name) ?? ([str(p.given_name), str(p.family_name)].filter(Boolean).join(' ') || undefined);
  if (name !== undefined) attributes.name = name;

  // A legal name only from identity-assured claims (or an explicit legal_name claim).
  const verifiedLegal =
    verified &&
    (str(verified.name) ??
      ([str(verified.given_name), str(verified.family_name)].filter(Boolean).join(' ') || undefined));
  const legal = verifiedLegal ?? str(p.legal_name);
  if (legal !== undefined) attributes.legal_name = legal;

  const fromVerified = verified?.birthdate !== undefined;
  const rawBirth = verified?.birthdate ?? p.birthdate;
  let dob: string | undefined;
  if (rawBirth !== undefined) {
    dob = birthDate(rawBirth, now);
    if (dob !== undefined) attributes.date_of_birth = dob;
    else skipped.push('birthdate');
  }
  // identity_verified vouches for legal_name and date_of_birth: set only when the verified claims carry at
  // least one of them and every one imported beside it came from there.
  const verifiedDob = fromVerified && dob !== undefined;
  if (verified) {
    const vouched =
      (verifiedLegal !== undefined || verifiedDob) &&
      (legal === undefined || verifiedLegal !== undefined) &&
      (dob === undefined || verifiedDob);
    if (vouched) attributes.identity_verified = true;
    else skipped.push('verified_claims');
  }
  return { attributes, skipped };
}

/** Verifies an ID token against one configured issuer and maps its claims. */
export async function verifyIdToken(token: string, opts: VerifyIdTokenOptions): Promise<IdTokenResult> {
  const now = opts.now ?? new Date();
  let payload: JWTPayload;
  try {
    const result = await jwtVerify(token, keyGetter(opts.jwks), {
      issuer: opts.issuer,
      audience: typeof opts.audience === 'string' ? opts.audience : [...opts.audience],
      algorithms: [...(opts.algorithms ?? DEFAULT_ALGORITHMS)],
      clockTolerance: opts.clockToleranceS ?? 60,
      maxTokenAge: opts.maxTokenAgeS ?? 600,
      currentDate: now,
      requiredClaims: ['sub', 'iat', 'exp'],
    });
    payload = result.payload;
  } catch (err) {
    return { ok: false, ...failure(err) };
  }
  // OIDC Core 3.1.3.7: with several audiences, the authorised party must be us.
  const audiences = typeof opts.audience === 'string' ? [opts.audience] : opts.audience;
  if (Array.isArray(payload.aud) && payload.aud.length > 1) {
    if (typeof payload.azp !== 'string' || !audiences.includes(payload.azp)) {
      return { ok: false, reason: 'wrong_audience', detail: 'several audiences and azp is not this client' };
    }
  }
  if (opts.nonce !== undefined) {
    if (typeof payload.nonce !== 'string' || !sameString(payload.nonce, opts.nonce)) {
      return {
        ok: false,
        reason: 'nonce_mismatch',
        detail: 'nonce does not match the authentication request',
      };
    }
  }
  const { attributes, skipped } = mapClaims(payload, now);
  return { ok: true, issuer: opts.issuer, subject: payload.sub as string, attributes, skipped };
}

/**
 * Verifies a token against the configured issuer named by its (unverified) `iss`; a token from an
 * issuer that is not configured fails with `wrong_issuer` before any key is fetched.
 */
export async function verifyIdTokenFromIssuers(
  token: string,
  issuers: readonly OidcIssuerConfig[],
  opts: { nonce?: string; now?: Date } = {},
): Promise<IdTokenResult> {
  let iss: unknown;
  try {
    iss = decodeJwt(token).iss;
  } catch (err) {
    return { ok: false, reason: 'malformed', detail: err instanceof Error ? err.message : 'not a JWT' };
  }
  const config = issuers.find((c) => c.issuer === iss);
  if (!config)
    return { ok: false, reason: 'wrong_issuer', detail: `issuer ${String(iss)} is not configured` };
  return verifyIdToken(token, { ...config, ...opts });
}

/** The API error for a refused token: 400 naming `id_token` and the reason (500 if the JWKS is down). */
export function idTokenError(result: Extract<IdTokenResult, { ok: false }>): AppError {
  if (result.reason === 'jwks_unavailable') return new AppError('INTERNAL_ERROR');
  return AppError.invalid('id_token', result.reason, `ID token rejected: ${result.reason}`);
}
