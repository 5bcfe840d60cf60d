import { AppError } from '@palmid/contracts/errors';
import { CLOSE_POLICY, parseFrame } from '@palmid/contracts/ws/frames';
import { VENDOR_AUTH_DEADLINE_MS, vendorAuthMethod, vendorMethods } from '@palmid/contracts/ws/vendor';
import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import type { AppContext, VendorPrincipal } from '../../context.ts';
import { CLOSE_TOO_MANY_SOCKETS } from '../../lib/live-sockets.ts';
import { serveRpc } from '../../lib/ws-rpc.ts';
import { CredentialGuard } from '../../plugins/app/credential-guard.ts';
import { guardHandlers } from '../revocation/watcher.ts';
import { authenticateVendor } from '../vendors/service.ts';
import { deliverableState, dropDelivered, loadVendorContext } from './state.ts';

type KeyCheck = { vendor: VendorPrincipal } | { refused: 'invalid' | 'too_many_failures' };

/**
 * A valid key with the `auth` scope. A valid key is always served; failures count against (client IP,
 * key prefix) and past the budget are refused as too_many_failures (CredentialGuard).
 */
async function vendorForKey(ctx: AppContext, ip: string, apiKey: unknown): Promise<KeyCheck> {
  const guard = new CredentialGuard(ctx);
  const vendor = await authenticateVendor(ctx.database.db, apiKey, ctx.config.PALMID_ENV).catch(
    () => undefined,
  );
  if (!vendor) {
    return { refused: (await guard.failed(ip, apiKey)) > 0 ? 'too_many_failures' : 'invalid' };
  }
  return vendor.scopes.includes('auth') ? { vendor } : { refused: 'invalid' };
}

/**
 * Serves an authenticated vendor socket. Its key must still be active before anything is sent on it
 * (docs/security.md, "Revocation is immediate"); `subscribe` counts against the key's auth-route limit.
 */
function serveVendor(ctx: AppContext, socket: WebSocket, vendor: VendorPrincipal, log: FastifyBaseLogger) {
  const live = () => ctx.revocations.isLive('api_key', vendor.keyId);
  const rpc = serveRpc(
    socket,
    vendorMethods,
    guardHandlers(
      {
        subscribe: async ({ auth_id }) => {
          const limit = await ctx.rateLimits.consume('auth', vendor.keyId);
          if (!limit.allowed) {
            throw new AppError('RATE_LIMITED', 'Too many requests', {
              reason: 'rate_limited',
              retry_after_s: limit.retryAfterS,
            });
          }
          const c = await loadVendorContext(ctx.database.db, vendor.id, auth_id);
          const { status, result, once } = deliverableState(ctx, c);
          // delivered: values consented with retention_days 0 are not kept (state.ts)
          if (once.length > 0)
            dropDelivered(ctx, c).catch((err: unknown) => log.warn({ err }, 'delivered values kept'));
          return { auth_id: c.id, status, ...(result ? { auth_result: result } : {}) };
        },
        ping: async () => ({ pong: true as const, time: new Date(ctx.now()).toISOString() }),
      },
      live,
    ),
    log,
  );
  // Notifications keep their order: each waits for the previous one's credential check.
  let delivered: Promise<void> = Promise.resolve();
  const off = ctx.events.subscribe('auth.updated', (e) => {
    if (e.vendorId !== vendor.id) return;
    delivered = delivered
      .then(async () => {
        if (socket.readyState !== socket.OPEN || !(await live())) return;
        rpc.send({
          method: 'auth.updated',
          params: {
            auth_id: e.authId,
            status: e.status,
            ...(e.auth_result ? { auth_result: e.auth_result } : {}),
            ...(e.reason ? { reason: e.reason } : {}),
          },
        });
      })
      .catch((err: unknown) => log.error({ err }, 'auth.updated delivery failed'));
  });
  socket.on('close', off);
}

/**
 * How many `/ws/vendor` sockets one client address may hold open before they authenticate (docs/websocket.md):
 * each waits at most VENDOR_AUTH_DEADLINE_MS, so an address cannot hold more than this many unauthenticated
 * connections on an instance; the next one is closed at once (1008 `too_many_sockets`).
 */
export const UNAUTHENTICATED_PER_IP = 20;

/**
 * The browser path: no X-API-Key header, so the first frame must be `auth {api_key}` within
 * VENDOR_AUTH_DEADLINE_MS. Anything else, a wrong key or silence closes the socket with 1008. Frames
 * that arrive while the key is being checked are kept and handed to the RPC loop afterwards.
 */
function awaitAuthFrame(
  ctx: AppContext,
  socket: WebSocket,
  ip: string,
  log: FastifyBaseLogger,
  authenticated: () => void,
) {
  const send = (frame: unknown) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
  };
  const refuse = (id: string | null, reason: string, message: string) => {
    const code = reason === 'too_many_failures' ? 'RATE_LIMITED' : 'UNAUTHORIZED';
    send({ id, error: { code, message, details: { field: 'api_key', reason } } });
    socket.close(CLOSE_POLICY, code === 'RATE_LIMITED' ? 'too_many_failures' : 'unauthorized');
  };
  const deadline = setTimeout(() => {
    if (socket.readyState === socket.OPEN) socket.close(CLOSE_POLICY, 'auth_timeout');
  }, VENDOR_AUTH_DEADLINE_MS);
  deadline.unref();
  socket.once('close', () => clearTimeout(deadline));

  let checking = false;
  const early: [RawData, boolean][] = [];
  const onMessage = (data: RawData, isBinary: boolean) => {
    if (checking) {
      early.push([data, isBinary]);
      return;
    }
    clearTimeout(deadline);
    const parsed = isBinary ? undefined : parseFrame(data.toString());
    const frame = parsed?.kind === 'request' ? parsed.frame : undefined;
    if (frame?.method !== 'auth') {
      refuse(frame?.id ?? null, 'auth_required', "The first frame must be 'auth' with params.api_key");
      return;
    }
    const params = vendorAuthMethod.params.safeParse(frame.params ?? {});
    if (!params.success) {
      refuse(frame.id, 'missing', 'Missing or invalid API key');
      return;
    }
    checking = true;
    vendorForKey(ctx, ip, params.data.api_key).then((check) => {
      if ('refused' in check) {
        const blocked = check.refused === 'too_many_failures';
        refuse(
          frame.id,
          check.refused,
          blocked
            ? 'Too many failed authentication attempts from this address'
            : 'Missing or invalid API key',
        );
        return;
      }
      const vendor = check.vendor;
      if (socket.readyState !== socket.OPEN) return;
      socket.off('message', onMessage);
      authenticated();
      if (!ctx.sockets.admit('api_key', vendor.keyId, socket)) return;
      send({ id: frame.id, result: { vendor_id: vendor.id, name: vendor.name, mode: vendor.mode } });
      serveVendor(ctx, socket, vendor, log);
      for (const [d, b] of early) socket.emit('message', d, b);
    });
  };
  socket.on('message', onMessage);
}

/**
 * /ws/vendor: live `auth.updated` notifications for every change of the vendor's contexts.
 * Two ways to authenticate (docs/web.md): the `X-API-Key` header (servers; a wrong key closes at once
 * with 1008), or, when the header is absent, a first `auth` frame carrying the key (browsers).
 */
export const vendorSocketRoutes: FastifyPluginAsync = async (app) => {
  const ctx = app.ctx;
  const principals = new WeakMap<object, KeyCheck | null>();
  /** client address → its sockets still waiting for an `auth` frame (this instance) */
  const unauthenticated = new Map<string, number>();
  const preValidation = async (request: { headers: Record<string, unknown>; raw: object; ip: string }) => {
    const header = request.headers['x-api-key'];
    principals.set(request.raw, header === undefined ? null : await vendorForKey(ctx, request.ip, header));
  };

  app.get('/ws/vendor', { websocket: true, preValidation, schema: { hide: true } }, (socket, request) => {
    const viaHeader = request.headers['x-api-key'] !== undefined;
    const check = principals.get(request.raw);
    if (viaHeader) {
      if (!check || 'refused' in check) {
        socket.close(
          CLOSE_POLICY,
          check?.refused === 'too_many_failures' ? 'too_many_failures' : 'unauthorized',
        );
        return;
      }
      if (ctx.sockets.admit('api_key', check.vendor.keyId, socket))
        serveVendor(ctx, socket, check.vendor, request.log);
      return;
    }
    // At most UNAUTHENTICATED_PER_IP sockets of one client address wait for their `auth` frame at once.
    const waiting = unauthenticated.get(request.ip) ?? 0;
    if (waiting >= UNAUTHENTICATED_PER_IP) {
      socket.close(CLOSE_POLICY, CLOSE_TOO_MANY_SOCKETS);
      return;
    }
    unauthenticated.set(request.ip, waiting + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const left = (unauthenticated.get(request.ip) ?? 1) - 1;
      if (left > 0) unauthenticated.set(request.ip, left);
      else unauthenticated.delete(request.ip);
    };
    socket.once('close', release);
    awaitAuthFrame(ctx, socket, request.ip, request.log, release);
  });
};
