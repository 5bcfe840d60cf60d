import { AppError } from '@palmid/shared/errors.ts';
import { CLOSE_POLICY } from '@palmid/shared/ws/frames.ts';
import { pvsMethods, type ScanRequest } from '@palmid/shared/ws/pvs.ts';
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { serveRpc } from '../../lib/ws-rpc.ts';
import { callerOf } from '../../plugins/app/auth.ts';
import { CredentialGuard } from '../../plugins/app/credential-guard.ts';
import { decodeTemplate } from '../auth-contexts/routes.ts';
import {
  type ContextRow,
  loadContext,
  markScanning,
  prepareProofs,
  publishUpdate,
  resolveWithPalm,
  toRecord,
} from '../auth-contexts/service.ts';
import { guardHandlers } from '../revocation/watcher.ts';
import { enrolAtKiosk } from './enrol.ts';
import { recallAnswer, rememberAnswer } from './idempotency.ts';
import { KioskLockout } from './lockout.ts';
import { authenticatePvs, type PvsPrincipal, touchPvs } from './service.ts';

function display(row: ContextRow): string {
  const r = toRecord(row);
  if (r.type === 'payment')
    return `Pay ${((r.amount ?? 0) / 100).toFixed(2)} ${r.currency ?? ''}: hold your palm over the scanner`;
  if (r.type === 'entrance')
    return r.minimum_age
      ? `Entrance (age ${r.minimum_age}+): hold your palm over the scanner`
      : 'Entrance: hold your palm over the scanner';
  return 'Sign in: hold your palm over the scanner';
}

function servesContext(pvs: PvsPrincipal, row: Pick<ContextRow, 'vendor_id' | 'pvs_id'>): boolean {
  if (row.pvs_id !== null) return row.pvs_id === pvs.id;
  return pvs.vendorId === null || pvs.vendorId === row.vendor_id;
}

/** Everything a kiosk may still act on: pending or scanning contexts addressed to it. */
async function openContextsFor(ctx: AppContext, pvs: PvsPrincipal): Promise<ContextRow[]> {
  let q = ctx.database.db
    .selectFrom('auth_contexts')
    .selectAll()
    .where('status', 'in', ['pending', 'scanning'])
    .where('expires_at', '>', ctx.now());
  if (pvs.vendorId !== null) q = q.where('vendor_id', '=', pvs.vendorId);
  const rows = await q.orderBy('created_at').limit(50).execute();
  return rows.filter((r) => servesContext(pvs, r));
}

export const pvsRoutes: FastifyPluginAsync = async (app) => {
  const ctx = app.ctx;
  const lockout = new KioskLockout(ctx.database.db);

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
    const unsubscribers: (() => void)[] = [];

    const push = async (row: ContextRow) => {
      if (!(await live())) return;
      const scanning = await markScanning(ctx, ctx.database.db, row);
      if (!scanning) return;
      if (scanning.status !== row.status) publishUpdate(ctx, scanning);
      const msg: ScanRequest = {
        auth_id: row.id,
        type: row.type,
        amount: row.amount === null ? null : Number(row.amount),
        currency: row.currency,
        display: display(row),
        expires_at: new Date(Number(row.expires_at)).toISOString(),
      };
      rpc.send({ method: 'scan.request', params: msg });
    };

    const rpc = serveRpc(
      socket,
      pvsMethods,
      guardHandlers(
        {
          hello: async (params) => {
            if (params.pvs_id !== pvs.id)
              throw new AppError('FORBIDDEN', 'pvs_id does not match the device token', {
                field: 'pvs_id',
                reason: 'mismatch',
              });
            await touchPvs(ctx.database.db, pvs.id, ctx.now());
            if (!unregister && params.mode !== 'enrol') {
              unregister = ctx.kiosks.register({
                pvsId: pvs.id,
                vendorId: pvs.vendorId,
                send: (m) => rpc.send(m),
              });
              unsubscribers.push(
                ctx.events.subscribe('scan.request', (e) => {
                  if (!servesContext(pvs, { vendor_id: e.vendorId, pvs_id: e.pvsId })) return;
                  void loadContext(ctx, ctx.database.db, e.authId)
                    .then((row) => (row ? push(row) : undefined))
                    .catch((err: unknown) => log.error({ err }, 'scan.request push failed'));
                }),
                ctx.events.subscribe('scan.cancel', (e) => {
                  if (!servesContext(pvs, { vendor_id: e.vendorId, pvs_id: e.pvsId })) return;
                  void live()
                    .then((ok) => ok && rpc.send({ method: 'scan.cancel', params: { auth_id: e.authId } }))
                    .catch((err: unknown) => log.error({ err }, 'scan.cancel push failed'));
                }),
              );
              // Contexts created while the kiosk was away are delivered now.
              setImmediate(() => {
                void openContextsFor(ctx, pvs)
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
            };
          },

          heartbeat: async () => {
            await touchPvs(ctx.database.db, pvs.id, ctx.now());
            return { time: new Date(ctx.now()).toISOString() };
          },

          enroll: (params, id) => enrolAtKiosk(ctx, pvs, params, id, caller),

          identify: async (params, id) => {
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
              if (previous) return previous as { status: string; auth_result: never };
              const template = params.template === undefined ? undefined : decodeTemplate(params.template);
              const palm = { template, hand: params.hand, liveness: params.liveness };
              const served = async (db: Db) => {
                const row = await loadContext(ctx, db, params.auth_id);
                if (!row || !servesContext(pvs, row)) {
                  throw new AppError('NOT_FOUND', 'Authentication context not found', {
                    field: 'auth_id',
                    reason: 'unknown',
                  });
                }
                return row;
              };
              // Zero-knowledge proofs are made before the transaction, which then only writes.
              const prepared = await prepareProofs(ctx, await served(ctx.database.db), palm);
              const resolution = await ctx.database.db.transaction().execute(async (trx) => {
                const res = await resolveWithPalm(ctx, trx, await served(trx), palm, caller, prepared);
                const answer = { status: res.row.status, auth_result: res.result };
                await rememberAnswer(ctx, trx, key, answer);
                return res;
              });
              const reason = resolution.result.reason;
              failed = reason === 'no_match' || reason === 'liveness_failed';
              publishUpdate(ctx, resolution.row, resolution.result);
              ctx.events.publish('scan.cancel', {
                vendorId: resolution.row.vendor_id,
                pvsId: resolution.row.pvs_id,
                authId: resolution.row.id,
              });
              return { status: resolution.row.status, auth_result: resolution.result };
            } finally {
              await lockout
                .settle(pvs.id, failed, now)
                .catch((err: unknown) => log.warn({ err }, 'kiosk lockout not recorded'));
            }
          },
        },
        live,
      ),
      log,
    );

    socket.on('close', () => {
      unregister?.();
      for (const u of unsubscribers) u();
    });
  });
};
