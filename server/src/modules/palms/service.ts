import type { PalmItem } from '@palmid/contracts/api/palms';
import { passesLiveness } from '@palmid/contracts/capture/liveness';
import { AppError } from '@palmid/contracts/errors';
import type { AppContext, Caller } from '../../context.ts';
import { hashSecret, newClaimCode, normaliseClaimCode } from '../../crypto/secrets.ts';
import type { Db } from '../../db/index.ts';
import { appendAudit } from '../audit/service.ts';
import { type AttestedCapture, auditAttestationFailure, checkAttestation } from '../devices/service.ts';
import { findPvs } from '../pvs/service.ts';
import { loadUserPalms } from '../users/gallery.ts';
import { palmsOf, removePalm } from '../users/service.ts';
import { getVendor } from '../vendors/service.ts';
import { palmStore } from './store.ts';

/**
 * Palms belong to their owner (docs/security.md). A palm is added to a user only
 *  (a) by enrolment at a kiosk without a vendor (a new user, who gets a claim code),
 *  (b) at any kiosk, or through `mpc/users/update`, with the user's one-time confirmation code from
 *      `POST /v1/palms/confirm` (10 minutes, single use),
 *  (c) by `mpc/users/create` (a new user of the calling vendor), whose palms must come from a capture
 *      device of that vendor (the capture attestation, docs/security.md "Attested captures").
 * Every enrolment is checked 1:N first: a palm that already matches another user's is refused with
 * `palm_already_enrolled` (no user disclosed; the owner sees a DENIED `palm_registered` audit record).
 * Every palm change is an audit record the user sees (`attribute_name: "palm_registered"`), and
 * enrolments are rate limited per capture device (`PALMID_ENROL_PER_MIN`, `PALMID_ENROL_PER_DAY`).
 */
export const PALM_AUDIT_NAME = 'palm_registered';
export const PALM_CONFIRMATION_TTL_MS = 10 * 60_000;

/** A fresh one-time code (same alphabet as claim codes, ≈ 50 bits); only its hash is stored. */
export async function issuePalmConfirmation(ctx: AppContext, db: Db, userId: string) {
  const code = newClaimCode();
  const now = ctx.now();
  const store = palmStore(db);
  await store.insertConfirmation({
    code_hash: hashSecret(`palm:${normaliseClaimCode(code)}`),
    user_id: userId,
    created_at: now,
    expires_at: now + PALM_CONFIRMATION_TTL_MS,
    used_at: null,
  });
  // Expired codes are pruned as new ones are issued.
  await store.pruneConfirmations(now);
  return { confirmation_code: code, expires_at: new Date(now + PALM_CONFIRMATION_TTL_MS).toISOString() };
}

function invalidCode(): AppError {
  return new AppError('INVALID_REQUEST', 'Unknown, used or expired palm confirmation code', {
    field: 'confirmation_code',
    reason: 'invalid_confirmation_code',
  });
}

/** `POST /v1/palms/confirm`: `issuePalmConfirmation` in a transaction of its own. */
export async function confirmPalms(ctx: AppContext, userId: string) {
  return ctx.database.db.transaction().execute((trx) => issuePalmConfirmation(ctx, trx, userId));
}

/**
 * Checks a confirmation code without spending it (a kiosk's `enroll.begin` with the code, so a wrong
 * code is said before anyone holds a palm over the scanner). Unknown, used and expired codes are the
 * same 400 as when spent; the `enroll` that follows still spends it (and may still find it gone).
 */
export async function checkPalmConfirmation(ctx: AppContext, db: Db, code: string): Promise<void> {
  const row = await palmStore(db).confirmation(hashSecret(`palm:${normaliseClaimCode(code)}`));
  if (!row || row.used_at !== null || Number(row.expires_at) <= ctx.now()) throw invalidCode();
}

/**
 * Spends a confirmation code and returns its user. With `forUser`, the code must be that user's (a
 * vendor updating its user cannot use another user's code). Unknown, used, expired and foreign codes
 * are one and the same 400.
 */
export async function consumePalmConfirmation(
  ctx: AppContext,
  db: Db,
  code: string,
  forUser?: string,
): Promise<string> {
  const hash = hashSecret(`palm:${normaliseClaimCode(code)}`);
  const now = ctx.now();
  const store = palmStore(db);
  const row = await store.confirmation(hash);
  if (!row || row.used_at !== null || Number(row.expires_at) <= now) throw invalidCode();
  if (forUser !== undefined && row.user_id !== forUser) throw invalidCode();
  if (!(await store.useConfirmation(hash, now))) throw invalidCode();
  return row.user_id;
}

export function confirmationRequired(): AppError {
  return new AppError(
    'INVALID_REQUEST',
    "Adding a palm to an existing user needs the user's one-time code from POST /v1/palms/confirm",
    { field: 'confirmation_code', reason: 'palm_confirmation_required' },
  );
}

/**
 * The 1:N check before any enrolment: the first template that matches an enrolled palm of anyone but
 * `owner` refuses the whole enrolment. Returns the user it matched (for that user's own audit trail,
 * never for the caller), or null.
 */
export function findEnrolledElsewhere(
  ctx: AppContext,
  templates: Uint8Array[],
  owner: string | null,
): string | null {
  for (const t of templates) {
    // The gallery-wide rule over every palm, whatever side the header or the request declares, and
    // never PALMID_MATCH_THRESHOLD's raised floor: one palm, one account (matching/identify.ts).
    const hit = ctx.gallery.findDuplicate(t, owner);
    if (hit) return hit.userId;
  }
  return null;
}

export function alreadyEnrolled(field: string): AppError {
  return new AppError('INVALID_REQUEST', 'This palm is already enrolled', {
    field,
    reason: 'palm_already_enrolled',
  });
}

const queues = new WeakMap<object, Promise<unknown>>();

/**
 * Runs enrolments of this instance one at a time, so two enrolments of the same palm cannot both pass
 * the 1:N check before either is in the gallery. (Instances share palms through the event hub; the
 * remaining window between instances is the hub's delivery time, docs/security.md.)
 */
export function serialiseEnrolment<T>(ctx: AppContext, step: () => Promise<T>): Promise<T> {
  const previous = queues.get(ctx) ?? Promise.resolve();
  const next = previous.then(step, step);
  queues.set(
    ctx,
    next.catch(() => undefined),
  );
  return next;
}

/** The user-visible trace of a palm change (or a refused attempt on the user's palm). */
export async function auditPalm(
  ctx: AppContext,
  db: Db,
  caller: Caller,
  userId: string,
  vendorId: string | null,
  result: 'SUCCESS' | 'DENIED',
  operation: 'UPDATE' | 'DELETE' = 'UPDATE',
): Promise<void> {
  await appendAudit(
    db,
    ctx.keyring,
    caller,
    [{ userId, vendorId, attributeName: PALM_AUDIT_NAME, operation, result }],
    ctx.now(),
  );
}

/**
 * Records a refused attempt on a user's palm in that user's audit trail, in a transaction of its own
 * (the request itself fails and rolls back).
 */
export async function auditRefusedPalm(
  ctx: AppContext,
  caller: Caller,
  userId: string,
  vendorId: string | null,
): Promise<void> {
  await ctx.database.db
    .transaction()
    .execute((trx) => auditPalm(ctx, trx, caller, userId, vendorId, 'DENIED'));
}

/**
 * Counts one enrolment against the capture device (`device`: a kiosk's pvs id, or for the vendor API the
 * vendor until its capture hosts are attested); 429 past `PALMID_ENROL_PER_MIN` or `PALMID_ENROL_PER_DAY`.
 */
export async function admitEnrolment(ctx: AppContext, device: string): Promise<void> {
  const d = await ctx.rateLimits.consume('enrol', device);
  if (!d.allowed) {
    throw new AppError('RATE_LIMITED', 'Too many enrolments from this capture device', {
      reason: 'enrolment_rate_limited',
      retry_after_s: d.retryAfterS,
    });
  }
}

/**
 * The gate before a vendor adds palms (`mpc/users/create`, `mpc/users/update` with the user's code): the
 * palms' capture attestation (one capture device registered to this vendor signed every palm, purpose
 * `register`; docs/vendor-api.md "Attested palms"), their liveness, the enrolment budget, then the 1:N check
 * against everyone but `owner`. A match is recorded in the matched user's audit trail and refused without
 * naming anyone; a refused attestation in the device's.
 */
export async function gateVendorPalms(
  ctx: AppContext,
  input: {
    vendorId: string;
    caller: Caller;
    palms: AttestedCapture[];
    owner: string | null;
    /** the pvs module's lookup of a capture device (it owns that table) */
    device: (id: string) => Promise<{ vendorId: string | null; revoked: boolean } | undefined>;
  },
): Promise<void> {
  const templates = input.palms.map((p) => p.template).filter((t): t is Uint8Array => t !== undefined);
  for (const t of templates) ctx.matcher.validate(t);
  const capture = await checkAttestation(ctx, {
    purpose: 'register',
    vendorId: input.vendorId,
    device: input.device,
    samples: input.palms,
  });
  if (!capture.ok) {
    await auditAttestationFailure(ctx, ctx.database.db, input.caller, capture, input.vendorId, ctx.now());
    throw new AppError('FORBIDDEN', `The palms' capture attestation was refused: ${capture.message}`, {
      field: 'palms',
      reason: 'attestation_failed',
    });
  }
  for (const p of input.palms) {
    if (p.liveness === undefined || !passesLiveness(p.liveness))
      throw new AppError('INVALID_REQUEST', 'A palm failed the liveness check', {
        field: 'palms',
        reason: 'liveness_failed',
      });
  }
  await admitEnrolment(ctx, `vendor:${input.vendorId}`);
  const elsewhere = findEnrolledElsewhere(ctx, templates, input.owner);
  if (elsewhere) {
    await auditRefusedPalm(ctx, input.caller, elsewhere, input.vendorId);
    throw alreadyEnrolled('palms');
  }
}

/** Erasure (`eraseUser`, modules/gdpr): the user's palm confirmation codes. */
export async function erasePalmConfirmationsOf(db: Db, userId: string): Promise<void> {
  await palmStore(db).deleteConfirmationsOf(userId);
}

/** `GET /v1/palms`: the user's palms, oldest first, and where each was enrolled (never a template). */
export async function listPalms(db: Db, userId: string): Promise<PalmItem[]> {
  const palms: PalmItem[] = [];
  for (const p of await palmsOf(db, userId)) {
    const [kind, id] = p.source ? (p.source.split(/:(.*)/s) as [string, string]) : ['unknown', ''];
    let where: PalmItem['where'] = { kind: 'unknown', id: null, name: null };
    if (kind === 'kiosk') where = { kind, id, name: (await findPvs(db, id))?.name ?? null };
    else if (kind === 'vendor') where = { kind, id, name: (await getVendor(db, id))?.name ?? null };
    palms.push({
      palm_id: p.id,
      hand: p.hand,
      enrolled_at: new Date(Number(p.created_at)).toISOString(),
      where,
    });
  }
  return palms;
}

/**
 * `DELETE /v1/palms/{palm_id}`: removes one of the user's palms and audits it in one transaction; after
 * the commit this instance's gallery reloads the user's palms, the other instances on the event.
 */
export async function deletePalm(ctx: AppContext, caller: Caller, userId: string, palmId: string) {
  await ctx.database.db.transaction().execute(async (trx) => {
    await removePalm(trx, userId, palmId, ctx.now());
    await auditPalm(ctx, trx, caller, userId, null, 'SUCCESS', 'DELETE');
  });
  await loadUserPalms(ctx, userId);
  ctx.events.publish('gallery.changed', { userId, action: 'update' });
}
