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
import { sealFor } from '../../crypto/keyring.ts';
import type { Db } from '../../db/index.ts';

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
  await db
    .insertInto('verifiers')
    .values({
      id,
      name: input.name,
      public_jwk: JSON.stringify(key.publicKey),
      kid: key.kid,
      attributes: input.attributes.join(','),
      created_at: now,
      revoked_at: null,
    })
    .execute();
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
  const rows = await db.selectFrom('verifiers').selectAll().orderBy('created_at').execute();
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
  const row = await db.selectFrom('verifiers').select(['revoked_at']).where('id', '=', id).executeTakeFirst();
  if (!row) throw new AppError('NOT_FOUND', `No verifier ${id}`, { field: 'verifier_id', reason: 'unknown' });
  if (row.revoked_at === null)
    await db.updateTable('verifiers').set({ revoked_at: now }).where('id', '=', id).execute();
  const at = row.revoked_at === null ? now : Number(row.revoked_at);
  return { verifier_id: id, revoked_at: new Date(at).toISOString() };
}

/** Registered verifiers in the shape `verifyAttestation` trusts (revoked ones included, with revokedAt). */
export async function trustedVerifiers(db: Db): Promise<TrustedVerifier[]> {
  const rows = await db.selectFrom('verifiers').selectAll().execute();
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
  await db
    .insertInto('zk_openings')
    .values({
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
    })
    .execute();
}

export async function readOpenings(db: Db, authId: string) {
  return db.selectFrom('zk_openings').selectAll().where('auth_id', '=', authId).execute();
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
  await db
    .insertInto('attestations')
    .values({
      id,
      user_id: args.userId,
      attribute: args.attribute,
      verifier_id: args.verifierId,
      token_enc: sealFor(args.dataKey, args.userId, `attestation:${id}`, args.token),
      created_at: args.now,
    })
    .execute();
}

/** Erasure: a user's sealed proof openings and attestations go with the rest of the user's data. */
export async function eraseUserVerificationData(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('zk_openings').where('user_id', '=', userId).execute();
  await db.deleteFrom('attestations').where('user_id', '=', userId).execute();
  // the identity-provider account is no longer linked: it may be imported by a new account
  await db.deleteFrom('oidc_subjects').where('user_id', '=', userId).execute();
  await db.deleteFrom('oidc_nonces').where('user_id', '=', userId).execute();
  await db.deleteFrom('in_set_asks').where('user_id', '=', userId).execute();
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
  const scope = db
    .deleteFrom('in_set_asks')
    .where('vendor_id', '=', ask.vendorId)
    .where('user_id', '=', ask.userId)
    .where('attribute', '=', ask.attribute)
    .where('asked_at', '<', since);
  await scope.execute();
  const asked = await db
    .selectFrom('in_set_asks')
    .select('set_digest')
    .where('vendor_id', '=', ask.vendorId)
    .where('user_id', '=', ask.userId)
    .where('attribute', '=', ask.attribute)
    .execute();
  if (asked.some((r) => r.set_digest === digest)) return true;
  if (asked.length >= IN_SET_MAX_DISTINCT_SETS) return false;
  await db
    .insertInto('in_set_asks')
    .values({
      vendor_id: ask.vendorId,
      user_id: ask.userId,
      attribute: ask.attribute,
      set_digest: digest,
      asked_at: ask.now,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
  return true;
}
