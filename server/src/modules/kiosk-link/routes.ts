import { AppError } from '@palmid/contracts/errors';
import { CLOSE_POLICY } from '@palmid/contracts/ws/frames';
import { pvsMethods } from '@palmid/contracts/ws/pvs';
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import { serveRpc } from '../../lib/ws-rpc.ts';
import { callerOf } from '../../plugins/app/auth.ts';
import { CredentialGuard } from '../../plugins/app/credential-guard.ts';
import { type AuthContext, loadContext, openContexts } from '../auth-contexts/state.ts';
import { KioskLockout } from '../lockouts/service.ts';
import { authenticatePvs, type PvsPrincipal } from '../pvs/service.ts';
import { guardHandlers } from '../revocation/watcher.ts';
import { enrolAtKiosk } from './enrol.ts';
import {
  beginEnrolment,
  helloKiosk,
  identifyAtKiosk,
  kioskHeartbeat,
  offerToKiosk,
  type PendingStepUps,
  servesContext,
} from './service.ts';

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
    const pendingStepUps: PendingStepUps = new Map();
    const unsubscribers: (() => void)[] = [];

    const push = async (c: AuthContext) => {
      if (!(await live())) return;
      const msg = await offerToKiosk(ctx, pvs.id, c);
      if (msg) rpc.send({ method: 'scan.request', params: msg });
    };

    const rpc = serveRpc(
      socket,
      pvsMethods,
      guardHandlers(
        limitPerKiosk(ctx, pvs.id, {
          hello: async (params) => {
            const deviceKey = await helloKiosk(ctx, pvs, params);
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
          'enroll.begin': (params) => beginEnrolment(ctx, pvs.id, params),

          heartbeat: () => kioskHeartbeat(ctx, pvs.id),

          enroll: (params, id) => enrolAtKiosk(ctx, pvs, params, id, caller, log),

          identify: (params, id) =>
            identifyAtKiosk(ctx, {
              pvs,
              params,
              requestId: id,
              caller,
              log,
              lockout,
              pendingStepUps,
              canStepUp,
            }),
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
