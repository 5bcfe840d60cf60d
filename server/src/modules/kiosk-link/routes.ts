import { randomUUID } from 'node:crypto';
import type { AuthResult, FailureReason } from '@palmid/shared/api/auth-contexts.ts';
import { AppError } from '@palmid/shared/errors.ts';
import { CLOSE_POLICY } from '@palmid/shared/ws/frames.ts';
import { pvsMethods, type ScanRequest } from '@palmid/shared/ws/pvs.ts';
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { serveRpc } from '../../lib/ws-rpc.ts';
import { callerOf } from '../../plugins/app/auth.ts';
import { CredentialGuard } from '../../plugins/app/credential-guard.ts';
import { isStepUp, type PalmEvidence, resolve } from '../auth-contexts/resolve.ts';
import {
  type AuthContext,
  loadContext,
  markScanning,
  openContexts,
  publishUpdate,
} from '../auth-contexts/state.ts';
import {
  bindOnHello,
  checkAttestation,
  ENROLMENT_NONCE_TTL_MS,
  issueNonce,
  scanNonce,
} from '../devices/service.ts';
import { templateBytesFromBase64 } from '../matching/wire.ts';
import { authenticatePvs, type PvsPrincipal, touchPvs } from '../pvs/service.ts';
import { guardHandlers } from '../revocation/watcher.ts';
import { checkPalmConfirmation } from '../users/palms.ts';
import { enrolAtKiosk } from './enrol.ts';
import { recallAnswer, rememberAnswer } from './idempotency.ts';
import { KioskLockout, lockoutOutcome } from './lockout.ts';

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

/**
 * Every request a kiosk sends counts against its `pvs` budget (lib/rate-limits.ts, 600 a minute, every
 * socket and instance of the kiosk together): past it the request is refused with RATE_LIMITED
 * (docs/websocket.md), before any work is done.
 */
function limitPerKiosk<H extends object>(ctx: AppContext, pvsId: string, handlers: H): H {
  const out: Record<string, (params: unknown, id: string) => Promise<unknown>> = {};
  for (const [name, handler] of Object.entries(handlers) as [
    string,
    (params: unknown, id: string) => Promise<unknown>,
  ][]) {
    out[name] = async (params, id) => {
      const limit = ctx.rateLimits.consumeNow('pvs', pvsId) ?? (await ctx.rateLimits.consume('pvs', pvsId));
      if (!limit.allowed)
        throw new AppError('RATE_LIMITED', 'Too many requests from this kiosk', {
          reason: 'rate_limited',
          retry_after_s: limit.retryAfterS,
        });
      return handler(params, id);
    };
  }
  return out as H;
}

/** The kiosk addressing rule: a context for this kiosk, or for any kiosk of its vendor (or of any vendor). */
function servesContext(pvs: PvsPrincipal, c: Pick<AuthContext, 'vendorId' | 'pvsId'>): boolean {
  if (c.pvsId !== null) return c.pvsId === pvs.id;
  return pvs.vendorId === null || pvs.vendorId === c.vendorId;
}

export const pvsRoutes: FastifyPluginAsync = async (app) => {
  const ctx = app.ctx;
  const lockout = new KioskLockout(ctx.database.db, ctx.redis);

  const guard = new CredentialGuard(ctx);
  const principals = new WeakMap<object, PvsPrincipal | 'too_many_failures'>();
  // Authentication happens before the upgrade completes, so the socket handler can attach its message
  // listener synchronously and no early frame (the agent's hello) is lost. Failures count per client IP.
  // A valid token is always served; a failing one counts against (IP, prefix) and, past the budget, is
  // refused as too_many_failures instead of unauthorized (docs/security.md).
  const preValidation = async (request: { headers: Record<string, unknown>; raw: object; ip: string }) => {
    const header = request.headers.authorization;
    const pvs = await authenticatePvs(ctx.database.db, header).catch(() => undefined);
    if (pvs) principals.set(request.raw, pvs);
    else if ((await guard.failed(request.ip, header)) > 0) principals.set(request.raw, 'too_many_failures');
  };

  app.get('/ws/pvs', { websocket: true, preValidation, schema: { hide: true } }, (socket, request) => {
    const pvs = principals.get(request.raw);
    if (!pvs || pvs === 'too_many_failures') {
      socket.close(CLOSE_POLICY, pvs ?? 'unauthorized');
      return;
    }
    // At most two sockets per kiosk; all of them close when the kiosk is revoked (docs/security.md).
    if (!ctx.sockets.admit('pvs', pvs.id, socket)) return;
    const live = () => ctx.revocations.isLive('pvs', pvs.id);
    const log = request.log.child({ pvs_id: pvs.id });
    const caller = callerOf(request);
    let unregister: (() => void) | undefined;
    /** Whether this kiosk's agent can present the other hand (hello `capabilities: ["step_up"]`). */
    let canStepUp = false;
    /**
     * First captures of contexts that asked this kiosk for a step-up, kept on this socket until the
     * second capture arrives (or the context ends): never stored, gone when the socket closes.
     */
    const pendingStepUps = new Map<string, { palm: PalmEvidence; expiresAt: number }>();
    const unsubscribers: (() => void)[] = [];

    const push = async (c: AuthContext) => {
      if (!(await live())) return;
      const scanning = await ctx.database.db.transaction().execute((trx) => markScanning(ctx, trx, c));
      if (!scanning) return;
      if (scanning.status !== c.status) publishUpdate(ctx, scanning);
      // A fresh nonce per delivery, bound to this kiosk and context: the capture's attestation must carry it.
      const nonce = scanNonce(ctx, pvs.id, c.id);
      const msg: ScanRequest = {
        auth_id: c.id,
        type: c.type,
        amount: c.amount,
        currency: c.currency,
        display: display(c),
        expires_at: new Date(c.expiresAt).toISOString(),
        nonce,
      };
      rpc.send({ method: 'scan.request', params: msg });
    };

    const rpc = serveRpc(
      socket,
      pvsMethods,
      guardHandlers(
        limitPerKiosk(ctx, pvs.id, {
          hello: async (params) => {
            if (params.pvs_id !== pvs.id)
              throw new AppError('FORBIDDEN', 'pvs_id does not match the device token', {
                field: 'pvs_id',
                reason: 'mismatch',
              });
            const deviceKey = await bindOnHello(ctx.database.db, pvs.id, params.device_key, ctx.now());
            await touchPvs(ctx.database.db, pvs.id, ctx.now());
            canStepUp = params.capabilities?.includes('step_up') ?? false;
            if (!unregister && params.mode !== 'enrol') {
              unregister = ctx.kiosks.register({ pvsId: pvs.id, vendorId: pvs.vendorId });
              unsubscribers.push(
                ctx.events.subscribe('scan.request', (e) => {
                  if (!servesContext(pvs, e)) return;
                  void loadContext(ctx.database.db, e.authId)
                    .then((row) => (row ? push(row) : undefined))
                    .catch((err: unknown) => log.error({ err }, 'scan.request push failed'));
                }),
                ctx.events.subscribe('scan.cancel', (e) => {
                  if (!servesContext(pvs, e)) return;
                  void live()
                    .then((ok) => ok && rpc.send({ method: 'scan.cancel', params: { auth_id: e.authId } }))
                    .catch((err: unknown) => log.error({ err }, 'scan.cancel push failed'));
                }),
              );
              // Contexts created while the kiosk was away are delivered now.
              setImmediate(() => {
                void openContexts(ctx, pvs.vendorId, (c) => servesContext(pvs, c))
                  .then(async (rows) => {
                    for (const row of rows) await push(row);
                  })
                  .catch((err: unknown) => log.error({ err }, 'backlog push failed'));
              });
            }
            log.info({ agent_version: params.agent_version, firmware: params.firmware }, 'kiosk connected');
            return {
              pvs_id: pvs.id,
              vendor_id: pvs.vendorId,
              server_version: ctx.version,
              time: new Date(ctx.now()).toISOString(),
              device_key: deviceKey,
            };
          },

          // Any kiosk may begin one: whether it may then enrol is decided by `enroll` itself (enrol.ts).
          'enroll.begin': async (params) => {
            if (params.confirmation_code !== undefined)
              await checkPalmConfirmation(ctx, ctx.database.db, params.confirmation_code);
            const now = ctx.now();
            const enrolmentId = randomUUID();
            const expiresAt = now + ENROLMENT_NONCE_TTL_MS;
            const nonce = await issueNonce(
              ctx.database.db,
              { pvsId: pvs.id, purpose: 'enroll', subject: enrolmentId, expiresAt },
              now,
            );
            return { enrolment_id: enrolmentId, nonce, expires_at: new Date(expiresAt).toISOString() };
          },

          heartbeat: async () => {
            await touchPvs(ctx.database.db, pvs.id, ctx.now());
            return { time: new Date(ctx.now()).toISOString() };
          },

          enroll: (params, id) => enrolAtKiosk(ctx, pvs, params, id, caller, log),

          identify: async (params, id) => {
            const template =
              params.template === undefined ? undefined : templateBytesFromBase64(params.template);
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
              const key = `pvs:${pvs.id}:identify:${id}`;
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
                log.info(
                  { auth_id: params.auth_id, hand: outcome.hand },
                  'step-up: asking for the other hand',
                );
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
          },
        }),
        live,
      ),
      log,
    );

    socket.on('close', () => {
      pendingStepUps.clear();
      unregister?.();
      for (const u of unsubscribers) u();
    });
  });
};
