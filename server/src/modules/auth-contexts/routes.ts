import {
  authContextRecordSchema,
  authIdParamsSchema,
  authResultSchema,
  authStatusSchema,
  createAuthBodySchema,
  oneShotAuthBodySchema,
} from '@palmid/shared/api/auth-contexts.ts';
import { successSchema } from '@palmid/shared/envelope.ts';
import { AppError } from '@palmid/shared/errors.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { vendorErrors } from '../../lib/error-replies.ts';
import { callerOf, vendorOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { dispatchToKiosks } from './dispatch.ts';
import {
  cancelAuthContext,
  createAuthContext,
  loadContext,
  loadVendorContext,
  prepareProofs,
  publishUpdate,
  readResult,
  resolveWithPalm,
  toRecord,
} from './service.ts';

const vendorRoute = { auth: 'vendor', scope: 'auth', rate: 'auth' } as const;
const security = [{ apiKey: [] }];

export function decodeTemplate(b64: string): Uint8Array {
  const bytes = Buffer.from(b64.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (bytes.length === 0 || bytes.length > 1024) {
    throw new AppError('INVALID_REQUEST', 'Invalid palm.template: must be 1–1024 bytes of base64', {
      field: 'palm.template',
      reason: 'malformed',
    });
  }
  return new Uint8Array(bytes);
}

export const authContextRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;

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
      const vendor = vendorOf(request);
      const row = await ctx.database.db
        .transaction()
        .execute((trx) => createAuthContext(ctx, trx, vendor, request.body.auth_context));
      dispatchToKiosks(ctx, row);
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
    async (request, reply) => {
      const vendor = vendorOf(request);
      const before = await ctx.database.db
        .selectFrom('auth_contexts')
        .select('status')
        .where('id', '=', request.params.auth_id)
        .executeTakeFirst();
      const row = await ctx.database.db
        .transaction()
        .execute((trx) => loadVendorContext(ctx, trx, vendor.id, request.params.auth_id));
      const result = readResult(ctx, row);
      if (before && before.status !== row.status) publishUpdate(ctx, row, result);
      return ok(reply, { auth_id: row.id, status: row.status, ...(result ? { auth_result: result } : {}) });
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
      const vendor = vendorOf(request);
      const row = await ctx.database.db
        .transaction()
        .execute((trx) => cancelAuthContext(ctx, trx, vendor.id, request.params.auth_id));
      publishUpdate(ctx, row, readResult(ctx, row));
      ctx.events.publish('scan.cancel', { vendorId: row.vendor_id, pvsId: row.pvs_id, authId: row.id });
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
      const vendor = vendorOf(request);
      const { auth_context, palm } = request.body;
      const template = decodeTemplate(palm.template);
      ctx.matcher.validate(template);
      const evidence = { template, hand: palm.hand, liveness: palm.liveness };
      const needsProofs = auth_context.minimum_age != null || (auth_context.predicates?.length ?? 0) > 0;
      const { row, result } = needsProofs
        ? // Proving takes 0.2-0.5 s and must not hold the database: create, prove, then resolve.
          await (async () => {
            const created = await ctx.database.db
              .transaction()
              .execute((trx) => createAuthContext(ctx, trx, vendor, auth_context));
            const prepared = await prepareProofs(ctx, created, evidence);
            return ctx.database.db.transaction().execute(async (trx) => {
              const current = await loadContext(ctx, trx, created.id);
              if (!current) throw new AppError('NOT_FOUND', 'Authentication context not found');
              return resolveWithPalm(ctx, trx, current, evidence, callerOf(request), prepared);
            });
          })()
        : await ctx.database.db
            .transaction()
            .execute(async (trx) =>
              resolveWithPalm(
                ctx,
                trx,
                await createAuthContext(ctx, trx, vendor, auth_context),
                evidence,
                callerOf(request),
              ),
            );
      publishUpdate(ctx, row, result);
      return ok(reply, { auth_id: row.id, status: row.status, auth_result: result });
    },
  );
};
