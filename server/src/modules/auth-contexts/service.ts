import { randomUUID } from 'node:crypto';
import {
  type AuthContextInput,
  type AuthContextRecord,
  type AuthResult,
  type AuthStatus,
  type FailureReason,
  TERMINAL_STATUSES,
} from '@palmid/shared/api/auth-contexts.ts';
import { pseudonym } from '@palmid/shared/crypto/ids.ts';
import { AppError } from '@palmid/shared/errors.ts';
import type { AppContext, Caller, VendorPrincipal } from '../../context.ts';
import { open, seal } from '../../crypto/keyring.ts';
import type { Db } from '../../db/index.ts';
import type { AuthContextsTable } from '../../db/schema.ts';
import { readAttributeValues } from '../attributes/service.ts';
import { type AuditEntry, appendAudit } from '../audit/service.ts';
import { activeConsents } from '../consents/service.ts';
import { appendTransaction, type LedgerTransaction } from '../ledger/service.ts';
import { getUser, touchLastAuth } from '../users/service.ts';
import {
  ageProofJob,
  inSetName,
  inSetProofJob,
  keepProof,
  loadPredicates,
  type ProofJob,
  type Proven,
  predicateConsented,
  savePredicates,
} from '../verification/zk.ts';
import { ageAttributeName, ageOnDate } from './age.ts';

export type ContextRow = AuthContextsTable;

/** A liveness score below this is a presentation attack (the agent's detector is calibrated to it). */
export const LIVENESS_THRESHOLD = 0.5;
/** Attribute names that are never looked up as stored values. */
const SYNTHETIC = new Set(['pseudonym', 'age_proof']);

export function isTerminal(status: AuthStatus): boolean {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

export function toRecord(row: ContextRow): AuthContextRecord {
  return {
    auth_id: row.id,
    status: row.status,
    type: row.type,
    amount: row.amount === null ? null : Number(row.amount),
    currency: row.currency,
    minimum_age: row.minimum_age === null ? null : Number(row.minimum_age),
    attributes_required: JSON.parse(row.attributes_required) as string[],
    attributes_optional: JSON.parse(row.attributes_optional) as string[],
    pvs_id: row.pvs_id,
    created_at: new Date(Number(row.created_at)).toISOString(),
    expires_at: new Date(Number(row.expires_at)).toISOString(),
  };
}

function resultKey(ctx: AppContext): Buffer {
  return ctx.keyring.derive('auth-results');
}

export function readResult(ctx: AppContext, row: ContextRow): AuthResult | undefined {
  if (!row.result_enc) return undefined;
  return JSON.parse(
    open(resultKey(ctx), row.result_enc, `auth-result:${row.id}`).toString('utf8'),
  ) as AuthResult;
}

export async function createAuthContext(
  ctx: AppContext,
  db: Db,
  vendor: VendorPrincipal,
  input: AuthContextInput,
): Promise<ContextRow> {
  if (input.pvs_id) {
    const kiosk = await db
      .selectFrom('pvs')
      .select(['id', 'vendor_id', 'revoked_at'])
      .where('id', '=', input.pvs_id)
      .executeTakeFirst();
    if (!kiosk || kiosk.revoked_at !== null) {
      throw new AppError('NOT_FOUND', 'No such kiosk', { field: 'pvs_id', reason: 'unknown' });
    }
    if (kiosk.vendor_id !== null && kiosk.vendor_id !== vendor.id) {
      throw new AppError('FORBIDDEN', 'This kiosk belongs to another vendor', {
        field: 'pvs_id',
        reason: 'other_vendor',
      });
    }
  }
  const now = ctx.now();
  const row: ContextRow = {
    id: randomUUID(),
    vendor_id: vendor.id,
    type: input.type,
    amount: input.amount ?? null,
    currency: input.type === 'payment' ? (input.currency ?? 'EUR') : null,
    minimum_age: input.minimum_age ?? null,
    attributes_required: JSON.stringify(input.attributes_required ?? []),
    attributes_optional: JSON.stringify(input.attributes_optional ?? []),
    pvs_id: input.pvs_id ?? null,
    status: 'pending',
    result_enc: null,
    user_id: null,
    created_at: now,
    expires_at: now + (input.expires_in_s ?? ctx.config.PALMID_AUTH_TTL_S) * 1000,
    updated_at: now,
  };
  await db.insertInto('auth_contexts').values(row).execute();
  if (input.predicates) await savePredicates(db, row.id, input.predicates);
  return row;
}

/**
 * Loads a context of the calling vendor (another vendor's is 404, never 403: existence is not revealed).
 * A context whose deadline passed is expired on read, so the answer is right even between sweeps.
 */
export async function loadVendorContext(
  ctx: AppContext,
  db: Db,
  vendorId: string,
  authId: string,
): Promise<ContextRow> {
  const row = await db.selectFrom('auth_contexts').selectAll().where('id', '=', authId).executeTakeFirst();
  if (!row || row.vendor_id !== vendorId) {
    throw new AppError('NOT_FOUND', 'Authentication context not found', {
      field: 'auth_id',
      reason: 'unknown',
    });
  }
  return expireIfDue(ctx, db, row);
}

export async function loadContext(ctx: AppContext, db: Db, authId: string): Promise<ContextRow | undefined> {
  const row = await db.selectFrom('auth_contexts').selectAll().where('id', '=', authId).executeTakeFirst();
  return row ? expireIfDue(ctx, db, row) : undefined;
}

async function expireIfDue(ctx: AppContext, db: Db, row: ContextRow): Promise<ContextRow> {
  if (!isTerminal(row.status) && Number(row.expires_at) <= ctx.now()) {
    return finishWithoutUser(ctx, db, row, 'expired', 'expired');
  }
  return row;
}

/**
 * The compare-and-set behind `finishWithoutUser`: the new row if this call made the change, undefined if
 * another request (or another server instance) changed the context first.
 */
async function tryFinishWithoutUser(
  ctx: AppContext,
  db: Db,
  row: ContextRow,
  status: 'cancelled' | 'expired',
  reason: FailureReason,
): Promise<ContextRow | undefined> {
  const now = ctx.now();
  const result: AuthResult = {
    success: false,
    user_id: null,
    attributes: {},
    timestamp: new Date(now).toISOString(),
    reason,
  };
  return transition(ctx, db, row, status, result, null, now);
}

/** Moves a non-terminal context to a terminal state with no identified user (cancel, expiry). */
async function finishWithoutUser(
  ctx: AppContext,
  db: Db,
  row: ContextRow,
  status: 'cancelled' | 'expired',
  reason: FailureReason,
): Promise<ContextRow> {
  const updated = await tryFinishWithoutUser(ctx, db, row, status, reason);
  return (
    updated ??
    ((await db
      .selectFrom('auth_contexts')
      .selectAll()
      .where('id', '=', row.id)
      .executeTakeFirst()) as ContextRow)
  );
}

/** Compare-and-set on the status: a terminal state is never overwritten, even by a concurrent request. */
async function transition(
  ctx: AppContext,
  db: Db,
  row: ContextRow,
  status: AuthStatus,
  result: AuthResult | null,
  userId: string | null,
  now: number,
): Promise<ContextRow | undefined> {
  const result_enc = result
    ? seal(resultKey(ctx), Buffer.from(JSON.stringify(result), 'utf8'), `auth-result:${row.id}`)
    : null;
  const res = await db
    .updateTable('auth_contexts')
    .set({ status, result_enc, user_id: userId, updated_at: now })
    .where('id', '=', row.id)
    .where('status', '=', row.status)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) return undefined;
  return { ...row, status, result_enc, user_id: userId, updated_at: now };
}

export async function cancelAuthContext(
  ctx: AppContext,
  db: Db,
  vendorId: string,
  authId: string,
): Promise<ContextRow> {
  const row = await loadVendorContext(ctx, db, vendorId, authId);
  if (isTerminal(row.status)) {
    throw new AppError('INVALID_REQUEST', `The context is already ${row.status}`, {
      field: 'auth_id',
      reason: 'not_cancellable',
      status: row.status,
    });
  }
  const done = await finishWithoutUser(ctx, db, row, 'cancelled', 'cancelled');
  if (done.status !== 'cancelled') {
    throw new AppError('INVALID_REQUEST', `The context is already ${done.status}`, {
      field: 'auth_id',
      reason: 'not_cancellable',
      status: done.status,
    });
  }
  return done;
}

/** pending → scanning when a kiosk takes the context. Returns false if it was no longer pending. */
export async function markScanning(
  ctx: AppContext,
  db: Db,
  row: ContextRow,
): Promise<ContextRow | undefined> {
  if (row.status !== 'pending') return row.status === 'scanning' ? row : undefined;
  return transition(ctx, db, row, 'scanning', null, null, ctx.now());
}

/** Expires every overdue context; returns the rows that changed (for notifications). */
export async function expireOverdue(ctx: AppContext): Promise<ContextRow[]> {
  const db = ctx.database.db;
  const due = await db
    .selectFrom('auth_contexts')
    .selectAll()
    .where('status', 'in', ['pending', 'scanning'])
    .where('expires_at', '<=', ctx.now())
    .limit(500)
    .execute();
  const changed: ContextRow[] = [];
  // Every instance sweeps; only the one whose compare-and-set wins reports (and so notifies) the change.
  for (const row of due) {
    const done = await tryFinishWithoutUser(ctx, db, row, 'expired', 'expired');
    if (done) changed.push(done);
  }
  return changed;
}

export interface PalmEvidence {
  /** Absent only when the agent reports a presentation attack. */
  template?: Uint8Array | undefined;
  hand?: 'left' | 'right' | undefined;
  liveness?: number | undefined;
}

export interface Resolution {
  row: ContextRow;
  result: AuthResult;
}

/** Proofs made ahead of the writing transaction (see `prepareProofs`), keyed by `ProofJob.key`. */
export interface PreparedProofs {
  now: number;
  proofs: Map<string, Proven | undefined>;
}

type Decision =
  | { kind: 'fail'; reason: FailureReason }
  | {
      kind: 'identified';
      user: NonNullable<Awaited<ReturnType<typeof getUser>>>;
      vendor: { id: string; url: string };
      pseudo: string;
      attributes: Record<string, unknown>;
      audit: AuditEntry[];
      missing: string[];
      ageName: string | null;
      outcome: { status: 'completed' | 'failed'; reason?: FailureReason };
      /** statements to prove; only for a completed context */
      proofs: ProofJob[];
    };

/**
 * Liveness, 1:N identification, consent filtering and the age and set predicates: everything the
 * resolution decides, read-only, so it can run outside a transaction to prepare proofs.
 */
async function decide(
  ctx: AppContext,
  db: Db,
  row: ContextRow,
  palm: PalmEvidence,
  now: number,
): Promise<Decision> {
  if (palm.liveness !== undefined && palm.liveness < LIVENESS_THRESHOLD)
    return { kind: 'fail', reason: 'liveness_failed' };
  if (!palm.template) throw AppError.invalid('template', 'required', 'A template is required');
  ctx.matcher.validate(palm.template);
  const hit = ctx.gallery.identify(palm.template);
  const user = hit ? await getUser(db, hit.userId) : undefined;
  if (!hit || !user) return { kind: 'fail', reason: 'no_match' };

  const vendor = await db
    .selectFrom('vendors')
    .select(['id', 'url'])
    .where('id', '=', row.vendor_id)
    .executeTakeFirstOrThrow();
  const pseudo = pseudonym(user.id, vendor.id);
  const record = toRecord(row);
  const requested = [...record.attributes_required, ...record.attributes_optional];
  const consents = await activeConsents(db, user.id, vendor.id, now);
  const lookup = requested.filter((n) => !SYNTHETIC.has(n) && consents.has(n));
  const minAge = record.minimum_age;
  const ageName = minAge === null ? null : ageAttributeName(minAge);
  const ageConsented = ageName !== null && (consents.has(ageName) || consents.has('date_of_birth'));
  if (ageConsented && !lookup.includes('date_of_birth')) lookup.push('date_of_birth');
  // Zero-knowledge predicates (docs/zk-proofs.md): the value is read to prove, never disclosed.
  const predicates = await loadPredicates(db, row.id);
  for (const p of predicates)
    if (predicateConsented(consents, p) && !lookup.includes(p.attribute)) lookup.push(p.attribute);
  const values = await readAttributeValues(ctx, db, user.id, lookup, now);

  const attributes: Record<string, unknown> = {};
  const audit: AuditEntry[] = [];
  const missing: string[] = [];
  const read = (attributeName: string, ok: boolean) =>
    audit.push({
      userId: user.id,
      vendorId: vendor.id,
      attributeName,
      operation: 'READ',
      result: ok ? 'SUCCESS' : 'DENIED',
    });
  for (const name of requested) {
    const required = record.attributes_required.includes(name);
    if (name === 'pseudonym') {
      attributes.pseudonym = pseudo;
      continue;
    }
    if (name === 'age_proof') continue; // produced with the age predicate (zero-knowledge module)
    const has = consents.has(name) && values.has(name);
    if (has) attributes[name] = values.get(name);
    else if (required) missing.push(name);
    read(name, has);
  }

  let ageOk: boolean | null = null;
  const dob = values.get('date_of_birth');
  if (minAge !== null && ageName !== null) {
    // Audited as what the vendor received (age_over_N, yes or no), not the birth date it was computed
    // from: the user's activity page says what was disclosed (docs/user-api.md "Audit").
    if (!ageConsented || typeof dob !== 'string') {
      missing.push(ageName);
      read(ageName, false);
    } else {
      ageOk = ageOnDate(dob, new Date(now)) >= minAge;
      attributes[ageName] = ageOk;
      read(ageName, true);
    }
  }
  // Age was derived from the birth date only to compute the predicate; the date itself is disclosed only
  // when it was requested by name and consented.
  if (!requested.includes('date_of_birth')) delete attributes.date_of_birth;

  const proofs: ProofJob[] = [];
  // Proofs only of true statements: an underage user gets `age_over_N: false` and no proof.
  if (minAge !== null && ageOk === true && requested.includes('age_proof') && typeof dob === 'string')
    proofs.push(ageProofJob(ctx, row.id, now, dob, minAge));
  for (const p of predicates) {
    const value = values.get(p.attribute);
    const ok = predicateConsented(consents, p) && typeof value === 'string';
    if (!ok) missing.push(inSetName(p.attribute));
    else {
      attributes[inSetName(p.attribute)] = p.values.includes(value);
      if (p.values.includes(value) && p.proof !== false)
        proofs.push(inSetProofJob(ctx, row.id, now, p, value));
    }
    delete attributes[p.attribute];
    read(p.attribute, ok);
  }

  let outcome: { status: 'completed' | 'failed'; reason?: FailureReason };
  if (missing.length > 0) outcome = { status: 'failed', reason: 'consent_missing' };
  else if (ageOk === false) outcome = { status: 'failed', reason: 'underage' };
  else outcome = { status: 'completed' };
  // Proofs only for a completed context: nothing is disclosed otherwise.
  return {
    kind: 'identified',
    user,
    vendor,
    pseudo,
    attributes,
    audit,
    missing,
    ageName,
    outcome,
    proofs: outcome.status === 'completed' ? proofs : [],
  };
}

/**
 * Makes the context's zero-knowledge proofs before the writing transaction: proving costs
 * 0.2-0.5 s of CPU and must not hold the database (on SQLite one writer stalls every query).
 * `resolveWithPalm` decides again inside its transaction and uses a prepared proof only when the
 * same statement is still to be proved (same context, predicate, date and value); anything that
 * changed meanwhile (a consent revoked, an attribute edited) is decided afresh.
 */
export async function prepareProofs(
  ctx: AppContext,
  row: ContextRow,
  palm: PalmEvidence,
): Promise<PreparedProofs> {
  const now = ctx.now();
  const proofs = new Map<string, Proven | undefined>();
  if (isTerminal(row.status) || (row.minimum_age === null && !(await hasPredicates(ctx.database.db, row.id))))
    return { now, proofs };
  const decision = await decide(ctx, ctx.database.db, row, palm, now);
  if (decision.kind === 'identified') for (const job of decision.proofs) proofs.set(job.key, await job.run());
  return { now, proofs };
}

async function hasPredicates(db: Db, authId: string): Promise<boolean> {
  return (await loadPredicates(db, authId)).length > 0;
}

/**
 * Resolves a pending or scanning context with a palm: liveness, 1:N identification, consent filtering,
 * age predicate, ledger transaction and one audit record per requested attribute. Runs inside the
 * caller's transaction so that all of it is written or none. Pass `prepared` (from `prepareProofs`,
 * called before the transaction) to keep proving out of the transaction.
 */
export async function resolveWithPalm(
  ctx: AppContext,
  db: Db,
  row: ContextRow,
  palm: PalmEvidence,
  caller: Caller,
  prepared?: PreparedProofs,
): Promise<Resolution> {
  if (isTerminal(row.status)) {
    throw new AppError('INVALID_REQUEST', `The context is already ${row.status}`, {
      field: 'auth_id',
      reason: 'not_resolvable',
      status: row.status,
    });
  }
  const now = prepared?.now ?? ctx.now();
  const timestamp = new Date(now).toISOString();
  const finish = async (
    result: AuthResult,
    status: 'completed' | 'failed',
    userId: string | null,
  ): Promise<Resolution> => {
    const updated = await transition(ctx, db, row, status, result, userId, now);
    if (!updated) {
      throw new AppError('INVALID_REQUEST', 'The context changed state meanwhile', {
        field: 'auth_id',
        reason: 'not_resolvable',
      });
    }
    return { row: updated, result };
  };

  const d = await decide(ctx, db, row, palm, now);
  if (d.kind === 'fail') {
    const result: AuthResult = { success: false, user_id: null, attributes: {}, timestamp, reason: d.reason };
    return finish(result, 'failed', null);
  }
  const { user, vendor, pseudo, attributes, outcome } = d;
  const work = { ctx, db, authId: row.id, userId: user.id, now };
  for (const job of d.proofs) {
    const proven = prepared?.proofs.has(job.key) ? prepared.proofs.get(job.key) : await job.run();
    if (!proven) continue;
    await keepProof(work, proven);
    attributes[job.name] = proven.proof;
  }

  const result: AuthResult =
    outcome.status === 'completed'
      ? { success: true, user_id: pseudo, attributes, timestamp, ledger_id: user.ledger_id }
      : {
          success: false,
          user_id: pseudo,
          attributes: outcome.reason === 'underage' && d.ageName ? { [d.ageName]: false } : {},
          timestamp,
          ledger_id: user.ledger_id,
          reason: outcome.reason!,
          ...(d.missing.length > 0 ? { missing: d.missing } : {}),
        };

  const tx: LedgerTransaction = {
    'user-id': user.ledger_id,
    'context-id': row.id,
    attributes: [
      { type: 'pseudonym', context: pseudo },
      row.type === 'payment'
        ? { type: 'payment', context: Number(row.amount) }
        : { type: row.type, context: null },
    ],
    vendor: { id: vendor.id, url: vendor.url },
    timestamp: now,
    result: { code: outcome.status === 'completed' ? 'ok' : outcome.reason! },
  };
  await appendTransaction(db, tx);
  await appendAudit(db, ctx.keyring, caller, d.audit, now);
  if (outcome.status === 'completed') await touchLastAuth(db, user.id, now);
  return finish(result, outcome.status, user.id);
}

export function publishUpdate(ctx: AppContext, row: ContextRow, result?: AuthResult): void {
  ctx.events.publish('auth.updated', {
    vendorId: row.vendor_id,
    authId: row.id,
    status: row.status,
    ...(result ? { auth_result: result } : {}),
  });
}
