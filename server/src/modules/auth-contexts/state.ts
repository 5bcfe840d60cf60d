import { randomUUID } from 'node:crypto';
import {
  type AuthContextInput,
  type AuthContextRecord,
  type AuthResult,
  type AuthStatus,
  type FailureReason,
  TERMINAL_STATUSES,
} from '@palmid/contracts/api/auth-contexts';
import { AppError } from '@palmid/contracts/errors';
import type { AppContext, VendorPrincipal } from '../../context.ts';
import { Keyring, open, seal } from '../../crypto/keyring.ts';
import { inBatches } from '../../db/batches.ts';
import type { Db, WriteBatch } from '../../db/index.ts';
import { lastIso } from '../../lib/iso-date.ts';
import { activeConsents, revokeConsent } from '../consents/service.ts';
import { findKiosk } from '../pvs/service.ts';
import { savePredicates } from '../verification/zk.ts';
import { enqueueContextEvent } from '../webhooks/service.ts';
import { consentCovering } from './decide.ts';
import { type AuthContext, authContextStore } from './store.ts';

export type { AuthContext };

/**
 * The state machine of an authentication context (docs/architecture.md, "Life of an authentication
 * context"): pending → scanning → completed | failed, and cancelled or expired from either open state.
 * Every transition is a compare-and-set on the status, so a terminal state is never overwritten, even by
 * a concurrent request or another server instance. Expiry is written by the scheduler (`expireOverdue`,
 * run every second by server.ts); reads never write: a context past its deadline is only *shown* as
 * expired (`currentState`) until the scheduler records it.
 */

export function isTerminal(status: AuthStatus): boolean {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

// the creates of one group commit share their `created_at` and `expires_at` millisecond
const createdIso = lastIso();
const expiresIso = lastIso();

/** The public shape of a context (the API's `AuthContextRecord`). */
export function toRecord(c: AuthContext): AuthContextRecord {
  return {
    auth_id: c.id,
    status: c.status,
    type: c.type,
    amount: c.amount,
    currency: c.currency,
    minimum_age: c.minimumAge,
    ...(c.minimumAgeSource === 'verified' ? { minimum_age_source: 'verified' as const } : {}),
    attributes_required: c.attributesRequired,
    attributes_optional: c.attributesOptional,
    pvs_id: c.pvsId,
    created_at: createdIso(c.createdAt),
    expires_at: expiresIso(c.expiresAt),
  };
}

const resultKey = (ctx: Pick<AppContext, 'keyring'>) => ctx.keyring.derive('auth-results');

/**
 * Disclosed values do not linger (docs/security.md): a stored result keeps attribute values at most this
 * long after its context ended; then it holds their names only (`attributes_removed`).
 */
export const VALUES_KEPT_MS = 3_600_000;

/**
 * What is sealed: the result, and the names whose values are kept only until first delivered to the vendor
 * (consented with `retention_days: 0`). A result sealed before `once` existed is the bare AuthResult.
 */
interface StoredResult {
  result: AuthResult;
  once: string[];
}

function sealStored(ctx: Pick<AppContext, 'keyring'>, authId: string, stored: StoredResult): Buffer {
  return seal(resultKey(ctx), Buffer.from(JSON.stringify(stored), 'utf8'), `auth-result:${authId}`);
}

function openStored(ctx: Pick<AppContext, 'keyring'>, authId: string, sealed: Uint8Array): StoredResult {
  const parsed = JSON.parse(open(resultKey(ctx), sealed, `auth-result:${authId}`).toString('utf8')) as
    | StoredResult
    | AuthResult;
  return 'result' in parsed ? parsed : { result: parsed, once: [] };
}

function openResult(ctx: Pick<AppContext, 'keyring'>, authId: string, sealed: Uint8Array): AuthResult {
  return openStored(ctx, authId, sealed).result;
}

export function readResult(ctx: Pick<AppContext, 'keyring'>, c: AuthContext): AuthResult | undefined {
  return c.resultEnc ? openResult(ctx, c.id, c.resultEnc) : undefined;
}

const holdsValues = (r: AuthResult) => Object.keys(r.attributes).length > 0;

/**
 * `r` with the values of `names` (every value when undefined) taken out: their names move to
 * `attributes_removed`. Identifiers (`user_id`, `ledger_id`), success and reason stay.
 */
export function withoutValues(r: AuthResult, names?: (name: string) => boolean): AuthResult {
  const attributes: Record<string, unknown> = {};
  const removed = [...(r.attributes_removed ?? [])];
  for (const [name, value] of Object.entries(r.attributes)) {
    if (names === undefined || names(name)) removed.push(name);
    else attributes[name] = value;
  }
  if (removed.length === 0) return r;
  return { ...r, attributes, attributes_removed: removed };
}

/** The result of a context that ended without an identified user; an expired one is dated at its deadline. */
function resultWithoutUser(at: number, reason: FailureReason): AuthResult {
  return { success: false, user_id: null, attributes: {}, timestamp: new Date(at).toISOString(), reason };
}

export function isDue(c: AuthContext, now: number): boolean {
  return !isTerminal(c.status) && c.expiresAt <= now;
}

/**
 * The status and result a reader sees: a context past its deadline reads as expired even before the
 * scheduler wrote it (nothing is written or published by a read).
 */
export function currentState(ctx: AppContext, c: AuthContext): { status: AuthStatus; result?: AuthResult } {
  const { status, result } = deliverableState(ctx, c);
  return { status, ...(result ? { result } : {}) };
}

/**
 * `currentState`, with the names whose values go once delivered (`once`). Values past `values_until` read as
 * names only even before the scheduler strips them (`stripLapsedValues`).
 */
export function deliverableState(
  ctx: AppContext,
  c: AuthContext,
): { status: AuthStatus; result?: AuthResult; once: string[] } {
  const now = ctx.now();
  if (isDue(c, now))
    return { status: 'expired', result: resultWithoutUser(c.expiresAt, 'expired'), once: [] };
  if (!c.resultEnc) return { status: c.status, once: [] };
  const stored = openStored(ctx, c.id, c.resultEnc);
  if (c.valuesUntil !== null && c.valuesUntil <= now)
    return { status: c.status, result: withoutValues(stored.result), once: [] };
  const once = stored.once.filter((n) => Object.hasOwn(stored.result.attributes, n));
  return { status: c.status, result: stored.result, once };
}

/**
 * After a result was delivered to its vendor (a status read, a `subscribe` answer): the values consented
 * with `retention_days: 0` are dropped from the stored copy (compare-and-set; a concurrent change wins).
 */
export async function dropDelivered(ctx: AppContext, c: AuthContext): Promise<void> {
  if (!c.resultEnc) return;
  const stored = openStored(ctx, c.id, c.resultEnc);
  if (stored.once.length === 0) return;
  const once = new Set(stored.once);
  await rewriteStored(
    ctx,
    ctx.database.db,
    c,
    withoutValues(stored.result, (n) => once.has(n)),
  );
}

/** Re-seals `c`'s stored result as `result` (no `once` names left), with the `values_until` it now needs. */
async function rewriteStored(ctx: AppContext, db: Db, c: AuthContext, result: AuthResult): Promise<boolean> {
  if (!c.resultEnc) return false;
  const valuesUntil = holdsValues(result) ? c.valuesUntil : null;
  const sealed = sealStored(ctx, c.id, { result, once: [] });
  return authContextStore(db).replaceResult(c.id, c.resultEnc, sealed, valuesUntil);
}

/**
 * The scheduler's step for lingering values: every stored result past its `values_until` is re-sealed with
 * names only. Returns how many were stripped.
 */
export async function stripLapsedValues(ctx: AppContext): Promise<number> {
  const db = ctx.database.db;
  let stripped = 0;
  for (const c of await authContextStore(db).listValuesDue(ctx.now(), 500)) {
    if (!c.resultEnc) continue;
    const stored = openStored(ctx, c.id, c.resultEnc);
    const sealed = sealStored(ctx, c.id, { result: withoutValues(stored.result), once: [] });
    if (await authContextStore(db).replaceResult(c.id, c.resultEnc, sealed, null)) stripped++;
  }
  return stripped;
}

/**
 * A consent was revoked: the stored results of the user's contexts at that vendor keep only the values
 * that `stillAllowed` (what the user's remaining consents cover); the others go now.
 */
export async function forgetWithdrawnValues(
  ctx: AppContext,
  db: Db,
  userId: string,
  vendorId: string,
  stillAllowed: (name: string) => boolean,
): Promise<void> {
  for (const c of await authContextStore(db).listWithValues(userId, vendorId)) {
    if (!c.resultEnc) continue;
    const stored = openStored(ctx, c.id, c.resultEnc);
    const result = withoutValues(stored.result, (n) => !stillAllowed(n));
    if (result === stored.result) continue;
    const once = stored.once.filter((n) => Object.hasOwn(result.attributes, n));
    const sealed = sealStored(ctx, c.id, { result, once });
    await authContextStore(db).replaceResult(
      c.id,
      c.resultEnc,
      sealed,
      holdsValues(result) ? c.valuesUntil : null,
    );
  }
}

/**
 * `DELETE /v1/consents/:consent_id`: revokes one of the user's consents (consents `revokeConsent`) and, in
 * the same transaction, drops from the vendor's stored results the values the user's remaining consents no
 * longer cover. `vendorId` is the consent's vendor (for the caller, not the answer).
 */
export async function withdrawConsent(ctx: AppContext, userId: string, consentId: string) {
  const now = ctx.now();
  return ctx.database.db.transaction().execute(async (trx) => {
    const done = await revokeConsent(trx, userId, consentId, now);
    // Disclosed values do not outlive the consent that allowed them (docs/security.md): the vendor's
    // stored results keep only what the user's remaining consents cover.
    const remaining = await activeConsents(trx, userId, done.vendorId, now);
    await forgetWithdrawnValues(
      ctx,
      trx,
      userId,
      done.vendorId,
      (name) => name === 'pseudonym' || consentCovering(name, remaining) !== undefined,
    );
    return done;
  });
}

/**
 * Creates a pending context in `db`'s transaction. With a group commit's `batch` (db/group-commit.ts) the row
 * is inserted with the rest of the group's, after this returned (one multi-row INSERT on PostgreSQL).
 */
export async function createAuthContext(
  ctx: AppContext,
  db: Db,
  vendor: VendorPrincipal,
  input: AuthContextInput,
  batch?: WriteBatch,
): Promise<AuthContext> {
  if (input.pvs_id) {
    const kiosk = await findKiosk(db, input.pvs_id);
    if (!kiosk || kiosk.revokedAt !== null) {
      throw new AppError('NOT_FOUND', 'No such kiosk', { field: 'pvs_id', reason: 'unknown' });
    }
    if (kiosk.vendorId !== null && kiosk.vendorId !== vendor.id) {
      throw new AppError('FORBIDDEN', 'This kiosk belongs to another vendor', {
        field: 'pvs_id',
        reason: 'other_vendor',
      });
    }
  }
  const now = ctx.now();
  const c: AuthContext = {
    id: randomUUID(),
    vendorId: vendor.id,
    type: input.type,
    amount: input.amount ?? null,
    currency: input.type === 'payment' ? (input.currency ?? 'EUR') : null,
    minimumAge: input.minimum_age ?? null,
    minimumAgeSource: input.minimum_age_source ?? 'any',
    attributesRequired: input.attributes_required ?? [],
    attributesOptional: input.attributes_optional ?? [],
    pvsId: input.pvs_id ?? null,
    status: 'pending',
    resultEnc: null,
    userId: null,
    createdAt: now,
    expiresAt: now + (input.expires_in_s ?? ctx.config.PALMID_AUTH_TTL_S) * 1000,
    updatedAt: now,
    valuesUntil: null,
  };
  if (batch) authContextStore(db).stage(batch, c);
  else await authContextStore(db).insert(c);
  if (input.predicates) await savePredicates(db, c.id, input.predicates);
  await enqueueContextEvent(db, {
    vendorId: c.vendorId,
    contextId: c.id,
    type: 'auth.created',
    payload: { auth_id: c.id, status: c.status },
    at: now,
  });
  return c;
}

export async function loadContext(db: Db, authId: string): Promise<AuthContext | undefined> {
  return authContextStore(db).get(authId);
}

/** Several contexts by id in one query (status reads of one turn, lib/turn-batch.ts); unknown ids are left out. */
export async function loadContexts(db: Db, ids: readonly string[]): Promise<AuthContext[]> {
  return authContextStore(db).getMany(ids);
}

/** A context of the calling vendor (another vendor's is 404, never 403: existence is not revealed). */
export async function loadVendorContext(db: Db, vendorId: string, authId: string): Promise<AuthContext> {
  return ownContext(await loadContext(db, authId), vendorId);
}

/** `c` when it exists and belongs to `vendorId`, else the NOT_FOUND error (another vendor's context is unknown). */
export function ownContext(c: AuthContext | undefined, vendorId: string): AuthContext {
  if (!c || c.vendorId !== vendorId) {
    throw new AppError('NOT_FOUND', 'Authentication context not found', {
      field: 'auth_id',
      reason: 'unknown',
    });
  }
  return c;
}

/** How a result's values are kept (`transition`): names kept only until first delivered, and whether it was. */
export interface Keeping {
  /** attribute names consented with `retention_days: 0` */
  once: string[];
  /** the result reaches the vendor in the answer of this very request (`POST /api/v1/auth`) */
  deliveredNow: boolean;
}

/**
 * Moves `c` to `status` (compare-and-set on its current status). Returns the new context if this call
 * made the change, undefined if another request (or instance) changed it first. A result with values keeps
 * them VALUES_KEPT_MS; those of `keeping.once` not at all when `keeping.deliveredNow`.
 */
export async function transition(
  ctx: AppContext,
  db: Db,
  c: AuthContext,
  status: AuthStatus,
  result: AuthResult | null,
  userId: string | null,
  now: number,
  keeping: Keeping = { once: [], deliveredNow: false },
): Promise<AuthContext | undefined> {
  const once = new Set(keeping.once);
  const kept = result && keeping.deliveredNow ? withoutValues(result, (n) => once.has(n)) : result;
  const change = {
    status,
    resultEnc: kept
      ? sealStored(ctx, c.id, { result: kept, once: keeping.deliveredNow ? [] : keeping.once })
      : null,
    userId,
    updatedAt: now,
    valuesUntil: kept && holdsValues(kept) ? now + VALUES_KEPT_MS : null,
  };
  if (!(await authContextStore(db).update(c, change))) return undefined;
  // The webhook outbox gets the event in the same transaction as the change (modules/webhooks).
  await enqueueContextEvent(db, {
    vendorId: c.vendorId,
    contextId: c.id,
    type: 'auth.updated',
    payload: { auth_id: c.id, status },
    at: now,
  });
  return { ...c, ...change };
}

/**
 * A stored answer (Idempotency-Key replay) as it may be shown now: when it carries a context's
 * `auth_result`, that result is replaced by the one a status read gives today, so a replay never shows
 * disclosed values the context itself no longer keeps (CONTRACT §10). Other answers are returned as stored.
 */
export async function currentAnswer(ctx: AppContext, body: string): Promise<string> {
  let parsed: { data?: { auth_id?: unknown; auth_result?: unknown } };
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  const data = parsed.data;
  if (!data || typeof data.auth_id !== 'string' || data.auth_result === undefined) return body;
  const c = await loadContext(ctx.database.db, data.auth_id);
  if (!c) return body;
  const { result } = currentState(ctx, c);
  // a result no longer kept (erasure) shows no values either
  const now = result ?? { ...(data.auth_result as AuthResult), attributes: {} };
  return JSON.stringify({ ...parsed, data: { ...data, auth_result: now } });
}

/**
 * What a webhook's `data` says about a context when it is sent (modules/webhooks/sender.ts): the event's
 * `{auth_id, status}` and, for a final status, the result as a status read would show it now.
 */
export async function webhookData(ctx: AppContext, stored: unknown): Promise<unknown> {
  const event = stored as { auth_id: string; status: AuthStatus };
  if (!isTerminal(event.status)) return event;
  const c = await loadContext(ctx.database.db, event.auth_id);
  if (!c) return event;
  const { result } = currentState(ctx, c);
  return result ? { ...event, auth_result: result } : event;
}

function notOpen(status: AuthStatus, reason: 'not_cancellable' | 'not_resolvable'): AppError {
  return new AppError('INVALID_REQUEST', `The context is already ${status}`, {
    field: 'auth_id',
    reason,
    status,
  });
}

/** Throws unless the context can still be resolved (not terminal, not past its deadline). */
export function assertResolvable(ctx: AppContext, c: AuthContext): void {
  const { status } = currentState(ctx, c);
  if (isTerminal(status)) throw notOpen(status, 'not_resolvable');
}

export async function cancelAuthContext(
  ctx: AppContext,
  db: Db,
  vendorId: string,
  authId: string,
): Promise<AuthContext> {
  const c = await loadVendorContext(db, vendorId, authId);
  const { status } = currentState(ctx, c);
  if (isTerminal(status)) throw notOpen(status, 'not_cancellable');
  const now = ctx.now();
  const done = await transition(ctx, db, c, 'cancelled', resultWithoutUser(now, 'cancelled'), null, now);
  if (!done) throw notOpen((await loadContext(db, authId))?.status ?? 'cancelled', 'not_cancellable');
  return done;
}

/** pending → scanning when a kiosk takes the context; undefined if it was no longer open. */
export async function markScanning(
  ctx: AppContext,
  db: Db,
  c: AuthContext,
): Promise<AuthContext | undefined> {
  if (isDue(c, ctx.now())) return undefined;
  if (c.status !== 'pending') return c.status === 'scanning' ? c : undefined;
  return transition(ctx, db, c, 'scanning', null, null, ctx.now());
}

/**
 * The scheduler's step: expires every overdue context and returns those this call changed. Every
 * instance sweeps; only the one whose compare-and-set wins reports (and so notifies) the change.
 */
export async function expireOverdue(ctx: AppContext): Promise<AuthContext[]> {
  const db = ctx.database.db;
  const changed: AuthContext[] = [];
  for (const c of await authContextStore(db).listDue(ctx.now(), 500)) {
    const done = await db
      .transaction()
      .execute((trx) =>
        transition(ctx, trx, c, 'expired', resultWithoutUser(c.expiresAt, 'expired'), null, ctx.now()),
      );
    if (done) changed.push(done);
  }
  return changed;
}

/** Tells the vendor (REST long-poll, /ws/vendor) that a context changed state. */
export function publishUpdate(ctx: AppContext, c: AuthContext, result?: AuthResult): void {
  ctx.events.publish('auth.updated', {
    vendorId: c.vendorId,
    authId: c.id,
    status: c.status,
    ...(result ? { auth_result: result } : {}),
  });
}

/**
 * Announces a new context to the kiosks: the chosen one, or every kiosk serving the vendor. The kiosk link
 * (modules/pvs) listens on the event hub, so with Redis a kiosk on another instance receives it too.
 */
export function dispatchToKiosks(ctx: AppContext, c: AuthContext): void {
  ctx.events.publish('scan.request', { vendorId: c.vendorId, pvsId: c.pvsId, authId: c.id });
}

/** Tells the kiosks to stop waiting for a palm for this context (it ended). */
export function withdrawFromKiosks(ctx: AppContext, c: AuthContext): void {
  ctx.events.publish('scan.cancel', { vendorId: c.vendorId, pvsId: c.pvsId, authId: c.id });
}

/** Open contexts a kiosk may act on, oldest first (`serves` is the kiosk's addressing rule). */
export async function openContexts(
  ctx: AppContext,
  vendorId: string | null,
  serves: (c: AuthContext) => boolean,
): Promise<AuthContext[]> {
  return (await authContextStore(ctx.database.db).listOpen(vendorId, ctx.now(), 50)).filter(serves);
}

/** The auth contexts' part of an erasure (modules/gdpr): the sealed results naming the user are dropped. */
export async function forgetResultsOf(db: Db, userId: string): Promise<void> {
  await authContextStore(db).forgetResultsOf(userId);
}

/**
 * The auth contexts' part of a master-key rotation (ops/rotate-master.ts): sealed results are re-sealed
 * under the new key's sub-key, each a compare-and-set on the old ciphertext; results the new key already
 * opens are counted as done.
 */
export async function resealResults(
  db: Db,
  from: Keyring,
  to: Keyring,
  batch: number,
  progress: (what: string, done: number) => void,
): Promise<{ resealed: number; already: number }> {
  const report = { resealed: 0, already: 0 };
  const [old, next] = [{ keyring: from }, { keyring: to }];
  await inBatches(db, {
    batch,
    page: (after, limit) => authContextStore(db).sealedResultsAfter(after, limit),
    key: (r) => r.id,
    progress: (done) => progress('auth results', done),
    each: async (trx, r) => {
      if (Keyring.opens(() => openResult(next, r.id, r.resultEnc))) {
        report.already++;
        return;
      }
      const sealed = sealStored(next, r.id, openStored(old, r.id, r.resultEnc));
      openStored(next, r.id, sealed); // prove the new seal before writing it
      await authContextStore(trx).replaceSealedResult(r.id, r.resultEnc, sealed);
      report.resealed++;
    },
  });
  return report;
}
