import { createHash, randomUUID } from 'node:crypto';
import { IN_SET_ASK_WINDOW_DAYS, IN_SET_MAX_DISTINCT_SETS } from '@palmid/contracts/api/domains';
import {
  generateVerifierKey,
  isVerifiedAttribute,
  jwkThumbprint,
  type TrustedVerifier,
  VERIFIED_ATTRIBUTES,
  type VerifiedAttributeName,
} from '@palmid/contracts/crypto/attestation';
import { AppError } from '@palmid/contracts/errors';
import type { ProveResult } from '@palmid/zk/prove';
import type { AppContext, Caller } from '../../context.ts';
import { sealFor } from '../../crypto/keyring.ts';
import { hashSecret, newSecret } from '../../crypto/secrets.ts';
import type { Db } from '../../db/index.ts';
import { auditedAccess } from '../attributes/audit.ts';
import { markAttributeVerified, writeAttribute } from '../attributes/service.ts';
import { dataKeyOf } from '../users/service.ts';
import { acceptAttestation } from './attestations.ts';
import { idTokenError, type OidcIssuerConfig, verifyIdTokenFromIssuers } from './oidc.ts';
import { verificationStore } from './store.ts';

export const VERIFIED_ATTRIBUTE_NAMES = Object.keys(VERIFIED_ATTRIBUTES) as VerifiedAttributeName[];

export function parseVerifiedAttributes(text: string): VerifiedAttributeName[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0)
    throw new AppError('INVALID_REQUEST', 'at least one attribute is required', {
      field: 'attributes',
      reason: 'empty',
    });
  for (const n of names) {
    if (!isVerifiedAttribute(n))
      throw new AppError(
        'INVALID_REQUEST',
        `'${n}' is not a verified attribute (allowed: ${VERIFIED_ATTRIBUTE_NAMES.join(', ')})`,
        { field: 'attributes', reason: 'not_verified_kind' },
      );
  }
  return [...new Set(names)] as VerifiedAttributeName[];
}

export interface CreatedVerifier {
  verifier_id: string;
  name: string;
  attributes: VerifiedAttributeName[];
  kid: string;
  public_jwk: TrustedVerifier['publicKey'];
  /** The private key, shown once to hand to the issuer; the service keeps only the public half. */
  private_jwk: { kty: 'OKP'; crv: 'Ed25519'; x: string; d: string; kid: string; alg: 'EdDSA' };
}

export async function createVerifier(
  db: Db,
  input: { name: string; attributes: VerifiedAttributeName[] },
  now: number = Date.now(),
): Promise<CreatedVerifier> {
  const id = `vrf_${randomUUID()}`;
  const key = generateVerifierKey(id);
  const jwk = key.privateKey.export({ format: 'jwk' });
  await verificationStore(db).insertVerifier({
    id,
    name: input.name,
    public_jwk: JSON.stringify(key.publicKey),
    kid: key.kid,
    attributes: input.attributes.join(','),
    created_at: now,
    revoked_at: null,
  });
  return {
    verifier_id: id,
    name: input.name,
    attributes: input.attributes,
    kid: key.kid,
    public_jwk: key.publicKey,
    private_jwk: { kty: 'OKP', crv: 'Ed25519', x: jwk.x ?? '', d: jwk.d ?? '', kid: key.kid, alg: 'EdDSA' },
  };
}

export interface VerifierInfo {
  verifier_id: string;
  name: string;
  attributes: string[];
  kid: string;
  created_at: string;
  revoked_at: string | null;
}

export async function listVerifiers(db: Db): Promise<VerifierInfo[]> {
  const rows = await verificationStore(db).listVerifiers();
  return rows.map((r) => ({
    verifier_id: r.id,
    name: r.name,
    attributes: r.attributes.split(','),
    kid: r.kid,
    created_at: new Date(Number(r.created_at)).toISOString(),
    revoked_at: r.revoked_at === null ? null : new Date(Number(r.revoked_at)).toISOString(),
  }));
}

export async function revokeVerifier(db: Db, id: string, now: number = Date.now()) {
  const store = verificationStore(db);
  const row = await store.verifierRevokedAt(id);
  if (!row) throw new AppError('NOT_FOUND', `No verifier ${id}`, { field: 'verifier_id', reason: 'unknown' });
  if (row.revoked_at === null) await store.markVerifierRevoked(id, now);
  const at = row.revoked_at === null ? now : Number(row.revoked_at);
  return { verifier_id: id, revoked_at: new Date(at).toISOString() };
}

/** Registered verifiers in the shape `verifyAttestation` trusts (revoked ones included, with revokedAt). */
export async function trustedVerifiers(db: Db): Promise<TrustedVerifier[]> {
  const rows = await verificationStore(db).listVerifiers();
  return rows.map((r) => {
    const publicKey = JSON.parse(r.public_jwk) as TrustedVerifier['publicKey'];
    if (jwkThumbprint(publicKey) !== r.kid)
      throw new Error(`verifier ${r.id}: stored kid does not match key`);
    return {
      verifierId: r.id,
      publicKey,
      attributes: r.attributes.split(',').filter(isVerifiedAttribute),
      ...(r.revoked_at !== null ? { revokedAt: new Date(Number(r.revoked_at)).toISOString() } : {}),
    };
  });
}

/** Keeps a proof's commitment opening for disputes, sealed under the user's data key (crypto-shredded on erasure). */
export async function saveOpening(
  db: Db,
  args: {
    authId: string;
    userId: string;
    dataKey: Buffer;
    commitment: string;
    opening: ProveResult['opening'];
    now: number;
  },
): Promise<void> {
  await verificationStore(db).insertOpening({
    auth_id: args.authId,
    attribute: args.opening.attribute,
    user_id: args.userId,
    commitment: args.commitment,
    opening_enc: sealFor(
      args.dataKey,
      args.userId,
      `zk-opening:${args.authId}:${args.opening.attribute}`,
      args.opening,
    ),
    created_at: args.now,
  });
}

export async function readOpenings(db: Db, authId: string) {
  return verificationStore(db).openingsOf(authId);
}

export async function saveAttestation(
  db: Db,
  args: {
    userId: string;
    attribute: string;
    verifierId: string;
    token: string;
    dataKey: Buffer;
    now: number;
  },
): Promise<void> {
  const id = randomUUID();
  await verificationStore(db).insertAttestation({
    id,
    user_id: args.userId,
    attribute: args.attribute,
    verifier_id: args.verifierId,
    token_enc: sealFor(args.dataKey, args.userId, `attestation:${id}`, args.token),
    created_at: args.now,
  });
}

/** Erasure: a user's sealed proof openings and attestations go with the rest of the user's data. */
export async function eraseUserVerificationData(db: Db, userId: string): Promise<void> {
  await verificationStore(db).deleteDataOf(userId);
}

/**
 * Counts a set a vendor asks about a user's attribute (docs/zk-proofs.md, "Set predicates"): a set asked
 * before (in any order) is admitted again; a new one only while fewer than `IN_SET_MAX_DISTINCT_SETS`
 * distinct sets were asked within `IN_SET_ASK_WINDOW_DAYS`. Older asks are pruned here.
 */
export async function admitSetAsk(
  db: Db,
  ask: { vendorId: string; userId: string; attribute: string; values: readonly string[]; now: number },
): Promise<boolean> {
  const since = ask.now - IN_SET_ASK_WINDOW_DAYS * 86_400_000;
  const digest = createHash('sha256')
    .update(JSON.stringify([...new Set(ask.values)].sort()), 'utf8')
    .digest('hex');
  const store = verificationStore(db);
  const scope = { vendorId: ask.vendorId, userId: ask.userId, attribute: ask.attribute };
  await store.pruneSetAsks(scope, since);
  const asked = await store.setAskDigests(scope);
  if (asked.includes(digest)) return true;
  if (asked.length >= IN_SET_MAX_DISTINCT_SETS) return false;
  await store.insertSetAsk({
    vendor_id: ask.vendorId,
    user_id: ask.userId,
    attribute: ask.attribute,
    set_digest: digest,
    asked_at: ask.now,
  });
  return true;
}

export interface WrittenVerified {
  name: string;
  kind: 'user' | 'verified';
  value: unknown;
  verified_by: string;
  updated_at: string;
  valid_from: string | null;
  valid_until: string | null;
}

const toMs = (iso: string | null) => (iso === null ? null : Date.parse(iso));

/**
 * `POST /v1/attributes/verified`: checks an attestation of a registered verifier about this user (issuer,
 * key, signature, subject, allowed attribute, validity) and stores the value as a verified attribute with
 * `verified_by` = the verifier and `valid_until` = the attestation's expiry; the token is kept sealed.
 */
export async function submitAttestation(
  ctx: AppContext,
  db: Db,
  userId: string,
  token: string,
  now: number,
): Promise<WrittenVerified> {
  const record = acceptAttestation(token, userId, await trustedVerifiers(db), new Date(now));
  const written = await writeAttribute(
    ctx,
    db,
    userId,
    {
      name: record.name,
      value: record.value,
      validFrom: toMs(record.valid_from),
      validUntil: toMs(record.valid_until),
      verifiedBy: record.verified_by,
    },
    'trusted',
    now,
  );
  await saveAttestation(db, {
    userId,
    attribute: record.name,
    verifierId: record.verified_by,
    token,
    dataKey: await dataKeyOf(ctx, db, userId),
    now,
  });
  return {
    ...written,
    kind: 'verified',
    value: record.value,
    verified_by: record.verified_by,
  };
}

/**
 * `POST /v1/attributes/import`: verifies the ID token against the configured issuers (outside any
 * transaction: the JWKS may be fetched), then `write` stores the mapped claims. Catalogue `verified` names
 * (`email_verified`, `legal_name`, `identity_verified`) are stored as verified; `email`, `name` and
 * `date_of_birth` stay user attributes (the user may correct them) but carry the issuer in `verified_by`
 * until the user overwrites them.
 */
const NONCE_TTL_MS = 10 * 60_000;

/** `POST /v1/attributes/import/nonce`: a single-use nonce for the user's next ID token (10 min). */
export async function issueImportNonce(ctx: AppContext, db: Db, userId: string) {
  const nonce = newSecret('oidcn');
  const now = ctx.now();
  const store = verificationStore(db);
  await store.pruneNonces(now);
  await store.insertNonce({ nonce_hash: hashSecret(nonce), user_id: userId, expires_at: now + NONCE_TTL_MS });
  return { nonce, expires_at: new Date(now + NONCE_TTL_MS).toISOString() };
}

/** Consumes a nonce issued to this user and still valid; anything else is a 400 naming `nonce`. */
async function consumeImportNonce(ctx: AppContext, db: Db, userId: string, nonce: string) {
  if (!(await verificationStore(db).consumeNonce(hashSecret(nonce), userId, ctx.now())))
    throw AppError.invalid(
      'nonce',
      'unknown_nonce',
      'Unknown, used or expired nonce: get one from POST /v1/attributes/import/nonce before signing in',
    );
}

/**
 * Binds (issuer, subject) to the user: the first import binds it, another user importing the same
 * subject is refused (403 `subject_bound`), so one identity-provider account vouches for one user.
 */
async function bindSubject(db: Db, issuer: string, subject: string, userId: string, now: number) {
  const store = verificationStore(db);
  const bound = await store.subjectOwner(issuer, subject);
  if (bound !== undefined && bound !== userId)
    throw new AppError('FORBIDDEN', 'This identity-provider account is already linked to another user', {
      field: 'id_token',
      reason: 'subject_bound',
    });
  if (bound === undefined) await store.bindSubject({ issuer, subject, user_id: userId, created_at: now });
}

export async function importIdToken(ctx: AppContext, idToken: string, nonce: string, userId: string) {
  const issuers = ctx.config.PALMID_OIDC_ISSUERS as unknown as OidcIssuerConfig[];
  const result = await verifyIdTokenFromIssuers(idToken, issuers, { nonce, now: new Date(ctx.now()) });
  if (!result.ok) throw idTokenError(result);
  const { issuer, subject, attributes, skipped } = result;
  return {
    issuer,
    async write(db: Db, writer: string) {
      if (writer !== userId) throw new AppError('INTERNAL_ERROR');
      const now = ctx.now();
      await consumeImportNonce(ctx, db, userId, nonce);
      await bindSubject(db, issuer, subject, userId, now);
      const out: WrittenVerified[] = [];
      for (const [name, value] of Object.entries(attributes)) {
        if (value === undefined) continue;
        const written = await writeAttribute(
          ctx,
          db,
          userId,
          { name, value, verifiedBy: issuer },
          'trusted',
          now,
        );
        if (written.kind === 'user') {
          await markAttributeVerified(db, userId, name, issuer);
        } else if (written.kind !== 'verified') {
          throw new AppError('INTERNAL_ERROR');
        }
        out.push({ ...written, kind: written.kind, value, verified_by: issuer });
      }
      return { issuer, attributes: out, skipped: [...skipped] };
    },
  };
}

/** `POST /v1/attributes/verified`: `submitAttestation`, audited as an update, in a transaction of its own. */
export function submitOwnAttestation(ctx: AppContext, caller: Caller, userId: string, token: string) {
  return auditedAccess(
    ctx,
    caller,
    userId,
    'UPDATE',
    (trx) => submitAttestation(ctx, trx, userId, token, ctx.now()),
    (w) => [w.name],
  );
}

/**
 * `POST /v1/attributes/import`: the ID token is verified outside any transaction (the JWKS may be
 * fetched), then its claims are written, audited as updates, in a transaction of their own.
 */
export async function importOwnIdToken(
  ctx: AppContext,
  caller: Caller,
  userId: string,
  idToken: string,
  nonce: string,
) {
  if (ctx.config.PALMID_OIDC_ISSUERS.length === 0)
    throw AppError.invalid('id_token', 'no_issuers_configured', 'No identity provider is configured');
  const verified = await importIdToken(ctx, idToken, nonce, userId);
  return auditedAccess(
    ctx,
    caller,
    userId,
    'UPDATE',
    (trx) => verified.write(trx, userId),
    (r) => r.attributes.map((a) => a.name),
  );
}
