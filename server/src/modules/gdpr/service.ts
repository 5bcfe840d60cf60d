import type { GdprExport } from '@palmid/contracts/api/gdpr';
import { AppError } from '@palmid/contracts/errors';
import type { AppContext, Caller } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { auditedAccess } from '../attributes/audit.ts';
import { eraseUserAttributes, listAttributes } from '../attributes/service.ts';
import { listAudit, shredAuditOf } from '../audit/service.ts';
import { forgetResultsOf } from '../auth-contexts/state.ts';
import { eraseUserConsents, listConsents } from '../consents/service.ts';
import { eraseAnswersOf } from '../kiosk-link/idempotency.ts';
import { eraseLedgerOf, userTransactions } from '../ledger/service.ts';
import { erasePalmConfirmationsOf } from '../palms/service.ts';
import { forgetPalms } from '../users/gallery.ts';
import { eraseUserRecord, getUser, palmRegistered, palmsOf } from '../users/service.ts';
import { eraseUserVerificationData } from '../verification/service.ts';

/** Enough for any real user; the export must not silently drop the oldest records. */
const EXPORT_AUDIT_LIMIT = 1_000_000;

const iso = (ms: number) => new Date(Number(ms)).toISOString();

/**
 * Everything held about the user (GDPR art. 15 and 20): attributes of every kind decrypted, every consent
 * (revoked and expired included), the audit records, the decoded ledger transactions and the palms
 * registered — hand and date only, never a template.
 */
export async function exportUserData(
  ctx: AppContext,
  db: Db,
  userId: string,
  now: number,
): Promise<GdprExport> {
  const user = await getUser(db, userId);
  if (!user) throw new AppError('NOT_FOUND', 'User not found', { field: 'user_id', reason: 'unknown' });
  const palms = await palmsOf(db, userId);
  return {
    exported_at: iso(now),
    user: {
      user_id: user.id,
      registration_date: iso(user.registration_date),
      last_auth: user.last_auth === null ? null : iso(user.last_auth),
      ledger_id: user.ledger_id,
      palm_registered: await palmRegistered(db, userId),
      palms: palms.map((p) => ({ palm_id: p.id, hand: p.hand, registered_at: iso(p.created_at) })),
    },
    attributes: await listAttributes(ctx, db, userId, now),
    consents: await listConsents(db, userId, now, true),
    audit: await listAudit(db, ctx.keyring, userId, EXPORT_AUDIT_LIMIT),
    ledger: { transactions: await userTransactions(db, user.ledger_id) },
  };
}

/**
 * Erasure (GDPR art. 17), asked of each module that holds a part of the user: the users module destroys
 * the wrapped data key first (crypto-shredding) and deletes templates, tokens and claim codes; then
 * attributes, consents, ledger entries, proof openings and attestations go, and sealed auth results naming
 * the user are dropped. Audit rows keep their place in the hash chain, but their personal fields (sealed
 * under the user's key) are shredded: nothing links them to the person, to each other or to a vendor. The
 * users row stays as a tombstone without its vendor, date or ledger links (docs/security.md). Run it in
 * one transaction.
 */
export async function eraseUser(ctx: AppContext, db: Db, userId: string) {
  const now = ctx.now();
  const { ledgerId } = await eraseUserRecord(db, userId, now);
  await erasePalmConfirmationsOf(db, userId);
  await eraseUserAttributes(db, userId);
  await eraseUserConsents(db, userId);
  await eraseLedgerOf(db, ledgerId);
  await eraseUserVerificationData(db, userId);
  await forgetResultsOf(db, userId);
  await eraseAnswersOf(db, userId);
  await shredAuditOf(db, userId);
  return { deleted: true as const, deleted_at: new Date(now).toISOString() };
}

/** `GET /v1/gdpr/export`: the user's own export; every exported attribute is an attribute read, audited. */
export async function exportOwnData(ctx: AppContext, caller: Caller, userId: string): Promise<GdprExport> {
  return auditedAccess(
    ctx,
    caller,
    userId,
    'READ',
    (trx) => exportUserData(ctx, trx, userId, ctx.now()),
    (exp) => exp.attributes.map((a) => a.name),
  );
}

/** `DELETE /v1/gdpr/delete-me`: the erasure, audited; only once it is committed may the gallery forget the palms. */
export async function eraseOwnData(ctx: AppContext, caller: Caller, userId: string) {
  const result = await auditedAccess(ctx, caller, userId, 'DELETE', (trx) => eraseUser(ctx, trx, userId), [
    '*',
  ]);
  forgetPalms(ctx, userId);
  return result;
}
