import { CLOSE_POLICY } from '@palmid/shared/ws/frames.ts';
import { vendorMethods } from '@palmid/shared/ws/vendor.ts';
import type { FastifyPluginAsync } from 'fastify';
import type { VendorPrincipal } from '../../context.ts';
import { serveRpc } from '../../lib/ws-rpc.ts';
import { authenticateVendor } from '../vendors/service.ts';
import { loadVendorContext, readResult } from './service.ts';

/** /ws/vendor: live `auth.updated` notifications for every change of the vendor's contexts. */
export const vendorSocketRoutes: FastifyPluginAsync = async (app) => {
  const ctx = app.ctx;
  const principals = new WeakMap<object, VendorPrincipal>();
  const preValidation = async (request: { headers: Record<string, unknown>; raw: object }) => {
    const vendor = await authenticateVendor(
      ctx.database.db,
      request.headers['x-api-key'],
      ctx.config.PALMID_ENV,
    ).catch(() => undefined);
    if (vendor?.scopes.includes('auth')) principals.set(request.raw, vendor);
  };

  app.get('/ws/vendor', { websocket: true, preValidation, schema: { hide: true } }, (socket, request) => {
    const vendor = principals.get(request.raw);
    if (!vendor) {
      socket.close(CLOSE_POLICY, 'unauthorized');
      return;
    }
    const rpc = serveRpc(
      socket,
      vendorMethods,
      {
        subscribe: async ({ auth_id }) => {
          const row = await ctx.database.db
            .transaction()
            .execute((trx) => loadVendorContext(ctx, trx, vendor.id, auth_id));
          const result = readResult(ctx, row);
          return { auth_id: row.id, status: row.status, ...(result ? { auth_result: result } : {}) };
        },
        ping: async () => ({ pong: true as const, time: new Date(ctx.now()).toISOString() }),
      },
      request.log,
    );
    const off = ctx.events.subscribe('auth.updated', (e) => {
      if (e.vendorId !== vendor.id) return;
      rpc.send({
        method: 'auth.updated',
        params: {
          auth_id: e.authId,
          status: e.status,
          ...(e.auth_result ? { auth_result: e.auth_result } : {}),
        },
      });
    });
    socket.on('close', off);
  });
};
