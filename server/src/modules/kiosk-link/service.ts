import { randomUUID } from 'node:crypto';
import type { AuthResult, FailureReason } from '@palmid/contracts/api/auth-contexts';
import { AppError } from '@palmid/contracts/errors';
import type { pvsMethods, ScanRequest } from '@palmid/contracts/ws/pvs';
import type { FastifyBaseLogger } from 'fastify';
import type { z } from 'zod';
import type { AppContext, Caller } from '../../context.ts';
import { isStepUp, type PalmEvidence, resolve } from '../auth-contexts/resolve.ts';
import { type AuthContext, loadContext, markScanning, publishUpdate } from '../auth-contexts/state.ts';
import {
  bindOnHello,
  checkAttestation,
  ENROLMENT_NONCE_TTL_MS,
  issueNonce,
  scanNonce,
} from '../devices/service.ts';
import { type KioskLockout, lockoutOutcome } from '../lockouts/service.ts';
import { templateBytesFromBase64 } from '../matching/wire.ts';
import { checkPalmConfirmation } from '../palms/service.ts';
import { type PvsPrincipal, touchPvs } from '../pvs/service.ts';
import { recallAnswer, rememberAnswer } from './idempotency.ts';

/**
 * The `/ws/pvs` link's work (docs/websocket.md): what a kiosk's `hello`, `heartbeat`, `enroll.begin` and
 * `identify` do, and what a `scan.request` it is sent says. routes.ts holds the socket: authentication,
 * rate limits, subscriptions and the RPC wiring. `enroll` is enrol.ts.
 */

type Params<M extends keyof typeof pvsMethods> = z.infer<(typeof pvsMethods)[M]['params']>;

function display(c: AuthContext): string {
  if (c.type === 'payment')
    return `Pay ${((c.amount ?? 0) / 100).toFixed(2)} ${c.currency ?? ''}: hold your palm over the scanner`;
  if (c.type === 'entrance')
    return c.minimumAge
      ? `Entrance (age ${c.minimumAge}+): hold your palm over the scanner`
      : 'Entrance: hold your palm over the scanner';
  return 'Sign in: hold your palm over the scanner';
}

type KioskOutcome = { status: string; success: boolean; reason?: FailureReason };

/**
 * What a kiosk is told of a resolution (docs/websocket.md, `identify`): the status, success and reason. The
 * result's attributes, pseudonym and ledger id are the vendor's, read through its own API.
 */
function kioskOutcome(c: AuthContext, result: AuthResult): KioskOutcome {
  return { status: c.status, success: result.success, ...(result.reason ? { reason: result.reason } : {}) };
}

/** The kiosk addressing rule: a context for this kiosk, or for any kiosk of its vendor (or of any vendor). */
export function servesContext(pvs: PvsPrincipal, c: Pick<AuthContext, 'vendorId' | 'pvsId'>): boolean {
  if (c.pvsId !== null) return c.pvsId === pvs.id;
  return pvs.vendorId === null || pvs.vendorId === c.vendorId;
}

/** `hello`: the kiosk's device key is bound (or checked) and the kiosk marked seen. */
export async function helloKiosk(ctx: AppContext, pvs: PvsPrincipal, params: Params<'hello'>) {
  if (params.pvs_id !== pvs.id)
    throw new AppError('FORBIDDEN', 'pvs_id does not match the device token', {
      field: 'pvs_id',
      reason: 'mismatch',
    });
  const deviceKey = await bindOnHello(ctx.database.db, pvs.id, params.device_key, ctx.now());
  await touchPvs(ctx.database.db, pvs.id, ctx.now());
  return deviceKey;
}

/** `heartbeat`: the kiosk is marked seen. */
export async function kioskHeartbeat(ctx: AppContext, pvsId: string) {
  await touchPvs(ctx.database.db, pvsId, ctx.now());
  return { time: new Date(ctx.now()).toISOString() };
}

/** `enroll.begin`: any kiosk may begin one; whether it may then enrol is decided by `enroll` (enrol.ts). */
export async function beginEnrolment(ctx: AppContext, pvsId: string, params: Params<'enroll.begin'>) {
  if (params.confirmation_code !== undefined)
    await checkPalmConfirmation(ctx, ctx.database.db, params.confirmation_code);
  const now = ctx.now();
  const enrolmentId = randomUUID();
  const expiresAt = now + ENROLMENT_NONCE_TTL_MS;
  const nonce = await issueNonce(
    ctx.database.db,
    { pvsId, purpose: 'enroll', subject: enrolmentId, expiresAt },
    now,
  );
  return { enrolment_id: enrolmentId, nonce, expires_at: new Date(expiresAt).toISOString() };
}

/**
 * A context offered to a kiosk: marked `scanning` (compare-and-set; the change published), then the
 * `scan.request` to send, with a fresh nonce bound to this kiosk and context (the capture's attestation
 * must carry it); undefined when the context is no longer open.
 */
export async function offerToKiosk(
  ctx: AppContext,
  pvsId: string,
  c: AuthContext,
): Promise<ScanRequest | undefined> {
  const scanning = await ctx.database.db.transaction().execute((trx) => markScanning(ctx, trx, c));
  if (!scanning) return undefined;
  if (scanning.status !== c.status) publishUpdate(ctx, scanning);
  const nonce = scanNonce(ctx, pvsId, c.id);
  return {
    auth_id: c.id,
    type: c.type,
    amount: c.amount,
    currency: c.currency,
    display: display(c),
    expires_at: new Date(c.expiresAt).toISOString(),
    nonce,
  };
}

/**
 * First captures of contexts that asked a kiosk for a step-up, kept on its socket until the second capture
 * arrives (or the context ends): never stored, gone when the socket closes.
 */
export type PendingStepUps = Map<string, { palm: PalmEvidence; expiresAt: number }>;

/**
 * `identify` (docs/websocket.md): the capture's attestation is checked as it arrives, the kiosk's lockout
 * admits the attempt (counted in flight until settled), a replayed request id gets its stored answer, and
 * `resolve` decides; a step-up keeps the capture for the other hand's.
 */
export async function identifyAtKiosk(
  ctx: AppContext,
  q: {
    pvs: PvsPrincipal;
    params: Params<'identify'>;
    requestId: string;
    caller: Caller;
    log: Pick<FastifyBaseLogger, 'info' | 'warn'>;
    lockout: KioskLockout;
    pendingStepUps: PendingStepUps;
    /** whether this kiosk's agent can present the other hand (hello `capabilities: ["step_up"]`) */
    canStepUp: boolean;
  },
) {
  const { pvs, params, caller, log, lockout, pendingStepUps, canStepUp } = q;
  const template = params.template === undefined ? undefined : templateBytesFromBase64(params.template);
  const checked = checkAttestation(ctx, {
    purpose: 'identify',
    deviceId: pvs.id,
    subject: params.auth_id,
    samples: [{ ...params, template }],
  });
  checked.catch(() => undefined); // awaited below; a lockout refusal must not leave it unhandled
  const now = ctx.now();
  const locked = await lockout.admit(pvs.id, now);
  if (locked > 0) {
    throw new AppError('RATE_LIMITED', 'This kiosk is locked after repeated failed matches', {
      reason: 'kiosk_locked',
      retry_after_s: Math.ceil(locked / 1000),
    });
  }
  // An admitted attempt counts as in flight until settled, so parallel identifies cannot outrun the lock.
  let failed: boolean | undefined;
  try {
    const key = `pvs:${pvs.id}:identify:${q.requestId}`;
    const previous = await recallAnswer(ctx, ctx.database.db, key);
    if (previous) return previous as KioskOutcome;
    const capture = await checked;
    if (!capture.ok) log.warn({ why: capture.why, auth_id: params.auth_id }, 'capture refused');
    for (const [authId, p] of pendingStepUps) if (p.expiresAt <= now) pendingStepUps.delete(authId);
    // The second capture of a step-up is fused with the first; it cannot step up again.
    const earlier = pendingStepUps.get(params.auth_id);
    pendingStepUps.delete(params.auth_id);
    const palm: PalmEvidence = { template, hand: params.hand, liveness: params.liveness, capture };
    const outcome = await resolve(ctx, {
      palm,
      ...(earlier ? { more: [earlier.palm] } : {}),
      canStepUp: canStepUp && !earlier,
      caller,
      context: async () => {
        const c = await loadContext(ctx.database.db, params.auth_id);
        if (!c || !servesContext(pvs, c)) {
          throw new AppError('NOT_FOUND', 'Authentication context not found', {
            field: 'auth_id',
            reason: 'unknown',
          });
        }
        return c;
      },
      // the kiosk's answer, and all the idempotency store keeps: no attribute, no identifier
      alsoWrite: (trx, res) =>
        rememberAnswer(
          ctx,
          trx,
          key,
          kioskOutcome(res.context, res.result),
          res.context.userId ? { userId: res.context.userId } : null,
        ),
      withdrawFromKiosks: true,
    });
    if (isStepUp(outcome)) {
      // Not a failure (the lockout does not count it) and not resolved: kept for the next capture.
      pendingStepUps.set(params.auth_id, {
        // its search too: the fused decision searches only the other hand's capture
        palm: { template, hand: params.hand, liveness: params.liveness, search: outcome.search },
        expiresAt: outcome.context.expiresAt,
      });
      log.info({ auth_id: params.auth_id, hand: outcome.hand }, 'step-up: asking for the other hand');
      const answer = {
        status: 'scanning' as const,
        step_up: { reason: 'step_up_required' as const, hand: outcome.hand },
      };
      // a retry of this request (after a reconnect) gets the same answer, not a replay refusal
      await rememberAnswer(ctx, ctx.database.db, key, answer, null);
      return answer;
    }
    const { context: c, result } = outcome;
    failed = lockoutOutcome(result.reason, c.userId);
    return kioskOutcome(c, result);
  } finally {
    await lockout
      .settle(pvs.id, failed, now)
      .catch((err: unknown) => log.warn({ err }, 'kiosk lockout not recorded'));
  }
}
