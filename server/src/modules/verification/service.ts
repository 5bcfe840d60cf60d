import { AppError } from '@palmid/contracts/errors';
import type { AppContext } from '../../context.ts';
import { hashSecret, newSecret } from '../../crypto/secrets.ts';
import type { Db } from '../../db/index.ts';
import { writeAttribute } from '../attributes/service.ts';
import { markAttributeVerified } from '../attributes/store.ts';
import { dataKeyOf } from '../users/service.ts';
import { acceptAttestation } from './attestations.ts';
import { idTokenError, type OidcIssuerConfig, verifyIdTokenFromIssuers } from './oidc.ts';
import { saveAttestation, trustedVerifiers } from './store.ts';

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
  await db.deleteFrom('oidc_nonces').where('expires_at', '<=', now).execute();
  await db
    .insertInto('oidc_nonces')
    .values({ nonce_hash: hashSecret(nonce), user_id: userId, expires_at: now + NONCE_TTL_MS })
    .execute();
  return { nonce, expires_at: new Date(now + NONCE_TTL_MS).toISOString() };
}

/** Consumes a nonce issued to this user and still valid; anything else is a 400 naming `nonce`. */
async function consumeImportNonce(ctx: AppContext, db: Db, userId: string, nonce: string) {
  const res = await db
    .deleteFrom('oidc_nonces')
    .where('nonce_hash', '=', hashSecret(nonce))
    .where('user_id', '=', userId)
    .where('expires_at', '>', ctx.now())
    .executeTakeFirst();
  if (Number(res.numDeletedRows) !== 1)
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
  const bound = await db
    .selectFrom('oidc_subjects')
    .select('user_id')
    .where('issuer', '=', issuer)
    .where('subject', '=', subject)
    .executeTakeFirst();
  if (bound && bound.user_id !== userId)
    throw new AppError('FORBIDDEN', 'This identity-provider account is already linked to another user', {
      field: 'id_token',
      reason: 'subject_bound',
    });
  if (!bound)
    await db
      .insertInto('oidc_subjects')
      .values({ issuer, subject, user_id: userId, created_at: now })
      .execute();
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
