import { AppError } from '@palmid/shared/errors.ts';
import type { AppContext } from '../../context.ts';
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
export async function importIdToken(ctx: AppContext, idToken: string, nonce?: string) {
  const issuers = ctx.config.PALMID_OIDC_ISSUERS as unknown as OidcIssuerConfig[];
  const result = await verifyIdTokenFromIssuers(idToken, issuers, {
    ...(nonce !== undefined ? { nonce } : {}),
    now: new Date(ctx.now()),
  });
  if (!result.ok) throw idTokenError(result);
  const { issuer, attributes, skipped } = result;
  return {
    issuer,
    async write(db: Db, userId: string) {
      const now = ctx.now();
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
