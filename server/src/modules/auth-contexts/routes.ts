import {
  authContextRecordSchema,
  authIdParamsSchema,
  authResultSchema,
  authStatusSchema,
  createAuthBodySchema,
  oneShotAuthBodySchema,
} from '@palmid/contracts/api/auth-contexts';
import { successSchema } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { vendorErrors } from '../../lib/error-replies.ts';
import { TurnBatch } from '../../lib/turn-batch.ts';
import { callerOf, vendorOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { DirectLockout } from '../devices/direct-lockout.ts';
import { cancelAndWithdraw, createAndOffer, resolveDirect } from './service.ts';
import {
  type AuthContext,
  deliverableState,
  dropDelivered,
  loadContexts,
  ownContext,
  toRecord,
} from './state.ts';

const vendorRoute = { auth: 'vendor', scope: 'auth', rate: 'auth' } as const;
const security = [{ apiKey: [] }];

export const authContextRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  const lockout = new DirectLockout(ctx.database.db);
  const statusReads = new TurnBatch<string, AuthContext>(async (ids) => {
    const found = await loadContexts(ctx.database.db, ids);
    return new Map(found.map((c) => [c.id, c]));
  });

  app.post(
    '/api/v1/auth/create',
    {
      config: vendorRoute,
      schema: {
        tags: ['auth'],
        summary: 'Create an authentication context; it is pushed to a kiosk',
        security,
        body: createAuthBodySchema,
        response: { 201: successSchema(authContextRecordSchema), ...vendorErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const row = await createAndOffer(ctx, vendorOf(request), request.body.auth_context);
      return ok(reply, toRecord(row), 201);
    },
  );

  app.get(
    '/api/v1/auth/:auth_id/status',
    {
      config: vendorRoute,
      schema: {
        tags: ['auth'],
        summary: 'Status of an authentication context (with its result once resolved)',
        security,
        params: authIdParamsSchema,
        response: { 200: successSchema(authStatusSchema), ...vendorErrors(400, 401, 403, 404, 429) },
      },
    },
    (request, reply) => {
      const vendor = vendorOf(request);
      // A read: nothing is written or published (expiry is the scheduler's, state.ts). The reads of one
      // event-loop turn share one query (lib/turn-batch.ts). One promise per request (the batch's), no
      // async function around it (docs/performance.md).
      return statusReads.load(request.params.auth_id).then((row) => {
        const c = ownContext(row, vendor.id);
        const { status, result, once } = deliverableState(ctx, c);
        // what the context asked for, so a client that did not create it (a second console tab, a
        // dashboard) can show it: type, amount, currency, created_at
        const { type, amount, currency, created_at } = toRecord(c);
        const base = { auth_id: c.id, status, type, amount, currency, created_at };
        ok(reply, result ? { ...base, auth_result: result } : base);
        // delivered: values consented with retention_days 0 are not kept (rare: no write otherwise)
        if (once.length > 0)
          dropDelivered(ctx, c).catch((err: unknown) => request.log.warn({ err }, 'delivered values kept'));
      });
    },
  );

  app.post(
    '/api/v1/auth/:auth_id/cancel',
    {
      config: vendorRoute,
      schema: {
        tags: ['auth'],
        summary: 'Cancel a pending or scanning context',
        security,
        params: authIdParamsSchema,
        response: {
          200: successSchema(z.object({ auth_id: z.string(), status: z.literal('cancelled') })),
          ...vendorErrors(400, 401, 403, 404, 429),
        },
      },
    },
    async (request, reply) => {
      const row = await cancelAndWithdraw(ctx, vendorOf(request).id, request.params.auth_id);
      return ok(reply, { auth_id: row.id, status: 'cancelled' as const });
    },
  );

  app.post(
    '/api/v1/auth',
    {
      config: vendorRoute,
      schema: {
        tags: ['auth'],
        summary:
          'Create and resolve a context in one call with a palm template (integrators running their own agent)',
        security,
        body: oneShotAuthBodySchema,
        response: {
          200: successSchema(
            z.object({ auth_id: z.string(), status: z.string(), auth_result: authResultSchema }),
          ),
          ...vendorErrors(400, 401, 403, 404, 429),
        },
      },
    },
    async (request, reply) => {
      const resolved = await resolveDirect(ctx, {
        vendor: vendorOf(request),
        caller: callerOf(request),
        body: request.body,
        lockout,
        log: request.log,
      });
      const { context: c, result } = resolved;
      // A stored copy of this answer (Idempotency-Key) is sealed under the identified person's data key.
      if (c.userId) request.idempotencyUser = c.userId;
      return ok(reply, { auth_id: c.id, status: c.status, auth_result: result });
    },
  );
};
