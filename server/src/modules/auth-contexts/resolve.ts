import type { AuthResult, FailureReason, InSetPredicate } from '@palmid/contracts/api/auth-contexts';
import { passesLiveness } from '@palmid/contracts/capture/liveness';
import { pseudonym } from '@palmid/contracts/crypto/ids';
import { AppError } from '@palmid/contracts/errors';
import { identifyProbes, type Probe } from '@palmid/palm/gallery/identify';
import type { GallerySearch, Hand } from '@palmid/palm/gallery/types';
import type { AppContext, Caller } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { readAttributeValues, verifierOf } from '../attributes/service.ts';
import { appendAudit } from '../audit/service.ts';
import { activeConsents, type ConsentGrant } from '../consents/service.ts';
import { auditAttestationFailure, type CaptureVerdict, settleAttestation } from '../devices/service.ts';
import { appendTransaction, type LedgerTransaction } from '../ledger/service.ts';
import { getUser, ledgerIdFor, touchLastAuth } from '../users/service.ts';
import { getVendor } from '../vendors/service.ts';
import { admitSetAsk } from '../verification/service.ts';
import {
  ageProofJob,
  inSetName,
  inSetProofJob,
  keepProof,
  loadPredicates,
  type ProofJob,
  type Proven,
  predicateConsented,
} from '../verification/zk.ts';
import { enqueueContextEvent } from '../webhooks/service.ts';
import {
  attributesToRead,
  consentCovering,
  type Disclosure,
  decideDisclosure,
  type ProofStatement,
} from './decide.ts';
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
  /** wire scale, 0–1 (@palmid/contracts/capture/liveness) */
  liveness?: number | undefined;
  /**
   * The capture's attestation verdict (modules/devices `checkAttestation`, docs/websocket.md "Attested
   * captures"): without a good one nothing is matched.
   */
  capture?: CaptureVerdict | undefined;
  /** This capture's 1:N search, when it was made before (a step-up's first capture): not made again. */
  search?: GallerySearch | undefined;
}

/** What the capture stage concluded: a refusal, or checked templates to match (one per capture). */
export type Capture =
  | { kind: 'refused'; reason: FailureReason }
  | { kind: 'palm'; template: Uint8Array; hand?: Hand | undefined; more?: Probe[] };

/**
 * The outcome of the 1:N search, made once per resolution and carried through every later stage.
 * `step_up`: the best candidate is plausible but below the gallery-wide bar (or not clearly ahead
 * of the next user) and the capture device can present `hand` in this context: nothing is
 * resolved yet. `ambiguous`: refused because two users were both near the bar.
 */
export type Identification =
  | { kind: 'refused'; reason: FailureReason }
  | { kind: 'searched'; userId: string | null; ambiguous?: boolean }
  | { kind: 'step_up'; hand: Hand; search: GallerySearch };

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
export function checkCapture(ctx: AppContext, palm: PalmEvidence, more: PalmEvidence[] = []): Capture {
  if (palm.template) ctx.matcher.validate(palm.template);
  for (const m of more) if (m.template) ctx.matcher.validate(m.template);
  // Attested captures: a capture its device did not sign, or signed for something else, is never matched.
  if (!palm.capture?.ok) return { kind: 'refused', reason: 'attestation_failed' };
  for (const p of [palm, ...more])
    if (p.liveness !== undefined && !passesLiveness(p.liveness))
      return { kind: 'refused', reason: 'liveness_failed' };
  if (!palm.template || more.some((m) => !m.template))
    throw AppError.invalid('template', 'required', 'A template is required');
  return {
    kind: 'palm',
    template: palm.template,
    hand: palm.hand,
    more: more.map((m) => ({ template: m.template!, hand: m.hand, search: m.search })),
  };
}

/**
 * Stage 2, the 1:N search over the in-memory gallery, decided for the whole gallery
 * (matching/identify.ts, CONTRACT §10). With `canStepUp` a plausible candidate asks for the other
 * hand instead of failing.
 */
export function matchCapture(ctx: AppContext, capture: Capture, canStepUp = false): Identification {
  if (capture.kind === 'refused') return capture;
  // Each capture is searched by the side its template header says (the pipeline mirrors left crops
  // by it), as before the gallery-wide decision; an unknown side searches every palm.
  const probes: Probe[] = [
    { template: capture.template },
    ...(capture.more ?? []).map((m) => ({ template: m.template, search: m.search })),
  ];
  const out = identifyProbes(ctx.gallery, probes, { canStepUp });
  const d = out.decision;
  if (d.kind === 'match') return { kind: 'searched', userId: d.userId };
  if (d.kind === 'step_up' && out.stepUpHand)
    return { kind: 'step_up', hand: out.stepUpHand, search: out.searches[0]! };
  return {
    kind: 'searched',
    userId: null,
    ...(d.kind === 'no_match' && d.reason === 'ambiguous' ? { ambiguous: true } : {}),
  };
}

/** Stages 1 and 2 together. */
export function identifyPalm(
  ctx: AppContext,
  palm: PalmEvidence,
  options: { more?: PalmEvidence[]; canStepUp?: boolean } = {},
): Identification {
  return matchCapture(ctx, checkCapture(ctx, palm, options.more), options.canStepUp);
}

type Decision =
  | { kind: 'fail'; reason: FailureReason; ambiguous?: boolean }
  | {
      kind: 'identified';
      user: { id: string; ledger_id: string };
      vendorLedgerId: string;
      vendor: { id: string; url: string };
      pseudo: string;
      disclosure: Disclosure;
      consents: ReadonlyMap<string, { retention_days: number }>;
    };

/**
 * The consents with the bound on distinct sets applied (docs/zk-proofs.md, "Set predicates"): a set
 * predicate admitted by an `<attr>_in_set` consent counts against the vendor's distinct sets for this user
 * and attribute; past the bound, the consent no longer admits it (`consent_missing`). A consent to the
 * attribute itself discloses the value anyway and is not bounded.
 */
async function boundSetAsks(
  db: Db,
  input: {
    consents: Map<string, ConsentGrant>;
    predicates: readonly InSetPredicate[];
    vendorId: string;
    userId: string;
    now: number;
  },
): Promise<Map<string, ConsentGrant>> {
  const out = new Map(input.consents);
  for (const p of input.predicates) {
    if (input.consents.has(p.attribute) || !predicateConsented(input.consents, p)) continue;
    const admitted = await admitSetAsk(db, {
      vendorId: input.vendorId,
      userId: input.userId,
      attribute: p.attribute,
      values: p.values,
      now: input.now,
    });
    if (!admitted) out.delete(inSetName(p.attribute));
  }
  return out;
}

/** Gathers what the decision reads (user, vendor, consents, predicates, attribute values) and decides. */
async function decide(
  ctx: AppContext,
  db: Db,
  c: AuthContext,
  seen: Identification,
  now: number,
): Promise<Decision> {
  if (seen.kind === 'refused') return { kind: 'fail', reason: seen.reason };
  if (seen.kind === 'step_up') return { kind: 'fail', reason: 'no_match' };
  const user = seen.userId ? await getUser(db, seen.userId) : undefined;
  if (!user) return { kind: 'fail', reason: 'no_match', ...(seen.ambiguous ? { ambiguous: true } : {}) };
  const vendor = await getVendor(db, c.vendorId);
  if (!vendor) throw new Error(`auth context ${c.id}: vendor ${c.vendorId} is missing`);
  const predicates = await loadPredicates(db, c.id);
  const consents = await boundSetAsks(db, {
    consents: await activeConsents(db, user.id, vendor.id, now),
    predicates,
    vendorId: vendor.id,
    userId: user.id,
    now,
  });
  const lookup = attributesToRead(c, consents, predicates);
  const values = await readAttributeValues(ctx, db, user.id, lookup, now, vendor.id);
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
    consents,
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
  if (isTerminal(c.status) || isDue(c, now) || seen.kind !== 'searched') return { now, proofs };
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
  deliveredNow = false,
): Promise<Resolution> {
  assertResolvable(ctx, c);
  const now = prepared?.now ?? ctx.now();
  const timestamp = new Date(now).toISOString();
  const finish = async (
    result: AuthResult,
    status: 'completed' | 'failed',
    userId: string | null,
    once: string[] = [],
  ) => {
    const updated = await transition(ctx, db, c, status, result, userId, now, { once, deliveredNow });
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
      {
        success: false,
        user_id: null,
        attributes: {},
        timestamp,
        reason: d.reason,
        ...(d.ambiguous ? { detail: 'ambiguous_match' as const } : {}),
      },
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
  // values consented with retention_days 0 are kept only until the vendor first has them (state.ts)
  const once = Object.keys(result.attributes).filter(
    (n) => consentCovering(n, d.consents)?.retention_days === 0,
  );
  return finish(result, outcome.status, user.id, once);
}

export interface ResolveRequest {
  palm: PalmEvidence;
  /**
   * Further captures of the same presentation, fused with `palm` (matching/identify.ts): the other
   * hand's capture of a step-up, or the REST path's `captures`. Their attestation was judged with
   * `palm`'s (one verdict for the request) or by the request that asked for the step-up.
   */
  more?: PalmEvidence[];
  /**
   * The capture device can present the other hand within this context (a kiosk): a plausible
   * candidate below the bar then asks for it (`StepUp`) instead of failing the context.
   */
  canStepUp?: boolean;
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
  /** The result goes to the vendor in this request's answer (`POST /api/v1/auth`): see `Keeping`. */
  deliveredNow?: boolean;
}

/** Whether a resolution asked for a step-up instead of resolving. */
export function isStepUp(r: Resolution | StepUp): r is StepUp {
  return 'stepUp' in r;
}

/** A resolution of a request that cannot step up (`canStepUp` not set). */
export function resolved(r: Resolution | StepUp): Resolution {
  if (isStepUp(r)) throw new Error('a step-up was asked of a path that cannot present more evidence');
  return r;
}

/** The context waits for more evidence: the capture device is to present `hand`. */
export interface StepUp {
  stepUp: true;
  context: AuthContext;
  hand: Hand;
  /** The first capture's search: kept with the capture, it is not made again for the fused decision. */
  search: GallerySearch;
}

/**
 * A step-up: the capture is accepted (its attestation counter moves, so it cannot be sent again),
 * the context stays open (scanning) and its vendor is told (`auth.updated` with `reason:
 * "step_up_required"`). The caller keeps the capture to fuse with the next one.
 */
async function askForMore(
  ctx: AppContext,
  req: ResolveRequest,
  first: AuthContext,
  hand: Hand,
  search: GallerySearch,
): Promise<StepUp | 'attestation_failed'> {
  const settled = await ctx.database.db.transaction().execute(async (trx) => {
    const current = await loadContext(trx, first.id);
    if (!current) throw new AppError('NOT_FOUND', 'Authentication context not found');
    assertResolvable(ctx, current);
    const capture = await settleAttestation(trx, req.palm.capture, ctx.now());
    if (!capture?.ok) return undefined;
    // webhook endpoints hear of the step-up as the vendor's socket does (same transaction, modules/webhooks)
    await enqueueContextEvent(trx, {
      vendorId: current.vendorId,
      contextId: current.id,
      type: 'auth.updated',
      payload: { auth_id: current.id, status: current.status, reason: 'step_up_required' },
      at: ctx.now(),
    });
    return current;
  });
  if (!settled) return 'attestation_failed';
  ctx.events.publish('auth.updated', {
    vendorId: settled.vendorId,
    authId: settled.id,
    status: settled.status,
    reason: 'step_up_required',
  });
  return { stepUp: true, context: settled, hand, search };
}

/**
 * The whole resolution: stages 1–5; with `canStepUp`, a plausible candidate below the bar answers
 * `StepUp` instead (nothing resolved).
 */
export async function resolve(ctx: AppContext, req: ResolveRequest): Promise<Resolution | StepUp> {
  let seen = identifyPalm(ctx, req.palm, {
    ...(req.more ? { more: req.more } : {}),
    canStepUp: req.canStepUp === true,
  });
  const first = await req.context();
  if (seen.kind === 'step_up') {
    const asked = await askForMore(ctx, req, first, seen.hand, seen.search);
    if (asked !== 'attestation_failed') return asked;
    seen = { kind: 'refused', reason: 'attestation_failed' };
  }
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
    const res = await resolveWithPalm(ctx, trx, current, judged, req.caller, prepared, req.deliveredNow);
    await req.alsoWrite?.(trx, res);
    return res;
  });
  publishUpdate(ctx, resolution.context, resolution.result);
  if (req.withdrawFromKiosks) withdrawFromKiosks(ctx, resolution.context);
  return resolution;
}
