import {
  webhookCreateBodySchema,
  webhookCreatedSchema,
  webhookDeliveriesQuerySchema,
  webhookDeliverySchema,
  webhookEndpointSchema,
  webhookIdParamsSchema,
} from '@palmid/contracts/api/webhooks';
import { successSchema } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { vendorErrors } from '../../lib/error-replies.ts';
import { vendorOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { createEndpoint, deleteEndpoint, deliveryLog, listEndpoints, replayDelivery } from './service.ts';

const vendorRoute = { auth: 'vendor', scope: 'auth', rate: 'auth' } as const;
const security = [{ apiKey: [] }];
const tags = ['webhooks'];

/** Signed webhooks (docs/vendor-api.md, "Webhooks"): endpoints, the delivery log, replays. */
export const webhookRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;

  app.post(
    '/api/v1/webhooks',
    {
      config: vendorRoute,
      schema: {
        tags,
        summary: 'Register a webhook endpoint; the answer holds its signing secret, shown once',
        security,
        body: webhookCreateBodySchema,
        response: { 201: successSchema(webhookCreatedSchema), ...vendorErrors(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const vendor = vendorOf(request);
      const created = await createEndpoint(ctx, ctx.database.db, vendor.id, request.body);
      return ok(reply, created, 201);
    },
  );

  app.get(
    '/api/v1/webhooks',
    {
      config: vendorRoute,
      schema: {
        tags,
        summary: 'Your webhook endpoints (without their secrets)',
        security,
        response: {
          200: successSchema(z.object({ webhooks: z.array(webhookEndpointSchema) })),
          ...vendorErrors(401, 403, 429),
        },
      },
    },
    async (request, reply) => {
      const vendor = vendorOf(request);
      return ok(reply, { webhooks: await listEndpoints(ctx.database.db, vendor.id) });
    },
  );

  app.delete(
    '/api/v1/webhooks/:id',
    {
      config: vendorRoute,
      schema: {
        tags,
        summary: 'Delete a webhook endpoint (its pending deliveries are dropped)',
        security,
        params: webhookIdParamsSchema,
        response: {
          200: successSchema(z.object({ id: z.string(), deleted: z.literal(true) })),
          ...vendorErrors(400, 401, 403, 404, 429),
        },
      },
    },
    async (request, reply) => {
      const vendor = vendorOf(request);
      await deleteEndpoint(ctx.database.db, vendor.id, request.params.id, ctx.now());
      return ok(reply, { id: request.params.id, deleted: true as const });
    },
  );

  app.get(
    '/api/v1/webhooks/deliveries',
    {
      config: vendorRoute,
      schema: {
        tags,
        summary: 'The delivery log: your webhook deliveries, newest first',
        security,
        querystring: webhookDeliveriesQuerySchema,
        response: {
          200: successSchema(z.object({ deliveries: z.array(webhookDeliverySchema) })),
          ...vendorErrors(400, 401, 403, 429),
        },
      },
    },
    async (request, reply) => {
      const vendor = vendorOf(request);
      const { endpoint_id, auth_id, limit } = request.query;
      const deliveries = await deliveryLog(ctx.database.db, vendor.id, {
        limit,
        ...(endpoint_id ? { endpointId: endpoint_id } : {}),
        ...(auth_id ? { authId: auth_id } : {}),
      });
      return ok(reply, { deliveries });
    },
  );

  app.post(
    '/api/v1/webhooks/deliveries/:id/replay',
    {
      config: vendorRoute,
      schema: {
        tags,
        summary: 'Send a delivery again (same event id); the answer is the new delivery',
        security,
        params: webhookIdParamsSchema,
        response: { 201: successSchema(webhookDeliverySchema), ...vendorErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const vendor = vendorOf(request);
      const replay = await replayDelivery(ctx.database.db, vendor.id, request.params.id, ctx.now());
      ctx.events.publish('webhook.queued', { vendorId: vendor.id });
      return ok(reply, replay, 201);
    },
  );
};
