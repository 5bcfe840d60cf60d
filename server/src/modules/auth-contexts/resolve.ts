import type { AuthResult, FailureReason } from '@palmid/shared/api/auth-contexts.ts';
import { pseudonym } from '@palmid/shared/crypto/ids.ts';
import { AppError } from '@palmid/shared/errors.ts';
import { passesLiveness } from '@palmid/shared/palm/liveness.ts';
import type { AppContext, Caller } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { readAttributeValues, verifierOf } from '../attributes/service.ts';
import { appendAudit } from '../audit/service.ts';
import { activeConsents } from '../consents/service.ts';
import { auditAttestationFailure, type CaptureVerdict, settleAttestation } from '../devices/service.ts';
import { appendTransaction, type LedgerTransaction } from '../ledger/service.ts';
import { getUser, ledgerIdFor, touchLastAuth } from '../users/service.ts';
import { getVendor } from '../vendors/service.ts';
import {
  ageProofJob,
  inSetProofJob,
  keepProof,
  loadPredicates,
  type ProofJob,
  type Proven,
} from '../verification/zk.ts';
import { attributesToRead, type Disclosure, decideDisclosure, type ProofStatement } from './decide.ts';
import {
  assertResolvable,
  isDue,
  isTerminal,
  loadContext,
  publishUpdate,
  transition,
  withdrawFromKiosks,
} from './state.ts';
import type { AuthContext } from './store.ts';

/**
 * Resolving an authentication context with a palm (docs/architecture.md, "Life of an authentication
 * context"): the one path behind both `POST /api/v1/auth` (auth-contexts/routes.ts) and the kiosk's
 * `identify` (kiosk-link/routes.ts). Its stages, in order:
 *
 * 1. `checkCapture`: the capture is judged: the template is checked (once, here), then liveness.
 * 2. `matchCapture`: the 1:N search, once per resolution.
 * 3. `prepareProofs`: the read-only decision, and the zero-knowledge proofs it asks for, made before
 *    the writing transaction (proving takes 0.2–0.5 s of CPU and must not hold the database).
 * 4. `resolveWithPalm`, inside one transaction: decided again from fresh reads (a consent revoked
 *    meanwhile is honoured), prepared proofs used where the statement is unchanged, then ledger, audit
 *    and the state transition.
 * 5. one publish of the new state.
 */

export interface PalmEvidence {
  /** Absent only when the agent reports a presentation attack. */
  template?: Uint8Array | undefined;
  hand?: 'left' | 'right' | undefined;
  /** wire scale, 0–1 (@palmid/shared/palm/liveness.ts) */
  liveness?: number | undefined;
  /**
   * The capture's attestation verdict (modules/devices `checkAttestation`, docs/websocket.md "Attested
   * captures"): without a good one nothing is matched.
   */
  capture?: CaptureVerdict | undefined;
}

/** What the capture stage concluded: a refusal, or a checked template to match. */
export type Capture = { kind: 'refused'; reason: FailureReason } | { kind: 'palm'; template: Uint8Array };

/** The outcome of the 1:N search, made once per resolution and carried through every later stage. */
export type Identification =
  | { kind: 'refused'; reason: FailureReason }
  | { kind: 'searched'; userId: string | null };

/** Proofs made ahead of the writing transaction, keyed by `ProofJob.key`. */
export interface PreparedProofs {
  now: number;
  proofs: Map<string, Proven | undefined>;
}

export interface Resolution {
  context: AuthContext;
  result: AuthResult;
}

/**
 * Stage 1, the capture. Every check of what the scanner delivered belongs here, before any matching:
 * the template's format (once per resolution) and liveness; a check of where the capture came from
 * (device attestation) goes here too.
 */
export function checkCapture(ctx: AppContext, palm: PalmEvidence): Capture {
  if (palm.template) ctx.matcher.validate(palm.template);
  // Attested captures: a capture its device did not sign, or signed for something else, is never matched.
  if (!palm.capture?.ok) return { kind: 'refused', reason: 'attestation_failed' };
  if (palm.liveness !== undefined && !passesLiveness(palm.liveness))
    return { kind: 'refused', reason: 'liveness_failed' };
  if (!palm.template) throw AppError.invalid('template', 'required', 'A template is required');
  return { kind: 'palm', template: palm.template };
}

/** Stage 2, the 1:N search over the in-memory gallery. */
export function matchCapture(ctx: AppContext, capture: Capture): Identification {
  if (capture.kind === 'refused') return capture;
  return { kind: 'searched', userId: ctx.gallery.identify(capture.template)?.userId ?? null };
}

/** Stages 1 and 2 together. */
export function identifyPalm(ctx: AppContext, palm: PalmEvidence): Identification {
  return matchCapture(ctx, checkCapture(ctx, palm));
}

type Decision =
  | { kind: 'fail'; reason: FailureReason }
  | {
      kind: 'identified';
      user: { id: string; ledger_id: string };
      vendorLedgerId: string;
      vendor: { id: string; url: string };
      pseudo: string;
      disclosure: Disclosure;
    };

/** Gathers what the decision reads (user, vendor, consents, predicates, attribute values) and decides. */
async function decide(
  ctx: AppContext,
  db: Db,
  c: AuthContext,
  seen: Identification,
  now: number,
): Promise<Decision> {
  if (seen.kind === 'refused') return { kind: 'fail', reason: seen.reason };
  const user = seen.userId ? await getUser(db, seen.userId) : undefined;
  if (!user) return { kind: 'fail', reason: 'no_match' };
  const vendor = await getVendor(db, c.vendorId);
  if (!vendor) throw new Error(`auth context ${c.id}: vendor ${c.vendorId} is missing`);
  const consents = await activeConsents(db, user.id, vendor.id, now);
  const predicates = await loadPredicates(db, c.id);
  const lookup = attributesToRead(c, consents, predicates);
  const values = await readAttributeValues(ctx, db, user.id, lookup, now);
  const pseudo = pseudonym(user.id, vendor.id);
  const birthDateSource =
    c.minimumAge === null ? undefined : ((await verifierOf(db, user.id, 'date_of_birth')) ?? 'self_asserted');
  const disclosure = decideDisclosure({
    ...(birthDateSource !== undefined ? { birthDateSource } : {}),
    context: c,
    userId: user.id,
    vendorId: vendor.id,
    pseudo,
    consents,
    predicates,
    values,
    now,
  });
  return {
    kind: 'identified',
    user,
    vendorLedgerId: ledgerIdFor(ctx, user, vendor.id),
    vendor: { id: vendor.id, url: vendor.url },
    pseudo,
    disclosure,
  };
}

function proofJob(ctx: AppContext, authId: string, now: number, s: ProofStatement): ProofJob {
  return s.kind === 'age'
    ? ageProofJob(ctx, authId, now, s.dateOfBirth, s.minimumAge, s.source)
    : inSetProofJob(ctx, authId, now, s.predicate, s.value);
}

/**
 * Stage 3: the context's zero-knowledge proofs, made before the writing transaction. `resolveWithPalm`
 * decides again inside its transaction and uses a prepared proof only when the same statement is still to
 * be proved (same context, predicate, date and value); anything that changed meanwhile is decided afresh.
 */
export async function prepareProofs(
  ctx: AppContext,
  c: AuthContext,
  seen: Identification,
): Promise<PreparedProofs> {
  const now = ctx.now();
  const proofs = new Map<string, Proven | undefined>();
  if (isTerminal(c.status) || isDue(c, now) || seen.kind === 'refused') return { now, proofs };
  if (c.minimumAge === null && (await loadPredicates(ctx.database.db, c.id)).length === 0)
    return { now, proofs };
  const d = await decide(ctx, ctx.database.db, c, seen, now);
  if (d.kind === 'identified')
    for (const s of d.disclosure.proofs) {
      const job = proofJob(ctx, c.id, now, s);
      proofs.set(job.key, await job.run());
    }
  return { now, proofs };
}

/**
 * Stage 4, inside the caller's transaction: decides from fresh reads, attaches proofs, writes the ledger
 * transaction, one audit record per requested attribute, and the transition. All of it is written or none.
 */
export async function resolveWithPalm(
  ctx: AppContext,
  db: Db,
  c: AuthContext,
  seen: Identification,
  caller: Caller,
  prepared?: PreparedProofs,
): Promise<Resolution> {
  assertResolvable(ctx, c);
  const now = prepared?.now ?? ctx.now();
  const timestamp = new Date(now).toISOString();
  const finish = async (result: AuthResult, status: 'completed' | 'failed', userId: string | null) => {
    const updated = await transition(ctx, db, c, status, result, userId, now);
    if (!updated) {
      throw new AppError('INVALID_REQUEST', 'The context changed state meanwhile', {
        field: 'auth_id',
        reason: 'not_resolvable',
      });
    }
    return { context: updated, result };
  };

  const d = await decide(ctx, db, c, seen, now);
  if (d.kind === 'fail')
    return finish(
      { success: false, user_id: null, attributes: {}, timestamp, reason: d.reason },
      'failed',
      null,
    );
  const { user, vendor, pseudo, disclosure, vendorLedgerId } = d;
  const { attributes, outcome } = disclosure;
  const work = { ctx, db, authId: c.id, userId: user.id, now };
  for (const s of disclosure.proofs) {
    const job = proofJob(ctx, c.id, now, s);
    const proven = prepared?.proofs.has(job.key) ? prepared.proofs.get(job.key) : await job.run();
    if (!proven) continue;
    await keepProof(work, proven);
    attributes[job.name] = proven.proof;
  }

  const result: AuthResult =
    outcome.status === 'completed'
      ? { success: true, user_id: pseudo, attributes, timestamp, ledger_id: vendorLedgerId }
      : {
          success: false,
          user_id: pseudo,
          attributes:
            outcome.reason === 'underage' && disclosure.ageName ? { [disclosure.ageName]: false } : {},
          timestamp,
          ledger_id: vendorLedgerId,
          reason: outcome.reason!,
          ...(disclosure.missing.length > 0 ? { missing: disclosure.missing } : {}),
        };
  // Requested names the result does not carry (not consented, no value, or failed): a typo shows here
  // instead of looking like a refusal (docs/vendor-api.md, "The result").
  const withheld = [...c.attributesRequired, ...c.attributesOptional].filter(
    (n) => !(n in result.attributes),
  );
  if (withheld.length > 0) result.withheld = withheld;

  const tx: LedgerTransaction = {
    'user-id': vendorLedgerId,
    'context-id': c.id,
    attributes: [
      { type: 'pseudonym', context: pseudo },
      ...(c.type === 'payment'
        ? [
            { type: 'payment', context: Number(c.amount) },
            { type: 'currency', context: c.currency ?? 'EUR' },
          ]
        : [{ type: c.type, context: null }]),
    ],
    vendor,
    timestamp: now,
    result: { code: outcome.status === 'completed' ? 'ok' : outcome.reason! },
  };
  await appendTransaction(db, tx, user.ledger_id);
  await appendAudit(db, ctx.keyring, caller, disclosure.audit, now);
  if (outcome.status === 'completed') await touchLastAuth(db, user.id, now);
  return finish(result, outcome.status, user.id);
}

export interface ResolveRequest {
  palm: PalmEvidence;
  caller: Caller;
  /**
   * The context to resolve, called once after the capture stages and before proving (it may create the
   * context, as the REST direct path does). Throws when the caller may not resolve it.
   */
  context(): Promise<AuthContext>;
  /** More writes in the resolving transaction (the kiosk's idempotency record). */
  alsoWrite?: (trx: Db, resolution: Resolution) => Promise<void>;
  /** Tell the kiosks to stop waiting for a palm for this context (it was offered to them). */
  withdrawFromKiosks?: boolean;
}

/** The whole resolution: stages 1–5. */
export async function resolve(ctx: AppContext, req: ResolveRequest): Promise<Resolution> {
  const seen = identifyPalm(ctx, req.palm);
  const first = await req.context();
  const prepared = await prepareProofs(ctx, first, seen);
  const resolution = await ctx.database.db.transaction().execute(async (trx) => {
    const current = await loadContext(trx, first.id);
    if (!current) throw new AppError('NOT_FOUND', 'Authentication context not found');
    // The capture's counter is accepted in this transaction, with the resolution it leads to; a refused
    // capture is audited under its device (modules/devices).
    const capture = await settleAttestation(trx, req.palm.capture, ctx.now());
    if (capture && !capture.ok)
      await auditAttestationFailure(ctx, trx, req.caller, capture, current.vendorId, ctx.now());
    const judged: Identification = capture?.ok ? seen : { kind: 'refused', reason: 'attestation_failed' };
    const res = await resolveWithPalm(ctx, trx, current, judged, req.caller, prepared);
    await req.alsoWrite?.(trx, res);
    return res;
  });
  publishUpdate(ctx, resolution.context, resolution.result);
  if (req.withdrawFromKiosks) withdrawFromKiosks(ctx, resolution.context);
  return resolution;
}
