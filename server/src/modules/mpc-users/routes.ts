import {
  mpcCreateBodySchema,
  mpcCreatedSchema,
  mpcDeletedSchema,
  mpcReadSchema,
  mpcUpdateBodySchema,
  mpcUpdatedSchema,
  mpcUserRefSchema,
} from '@palmid/contracts/api/users';
import { successSchema } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { vendorErrors } from '../../lib/error-replies.ts';
import { callerOf, vendorOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { createMpcUser, deleteMpcUser, readMpcUser, updateMpcUser } from './service.ts';

const vendorRoute = { auth: 'vendor', scope: 'users', rate: 'users' } as const;
const security = [{ apiKey: [] }];

export const mpcUserRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;

  app.post(
    '/api/v1/mpc/users/create',
    {
      config: vendorRoute,
      schema: {
        tags: ['users'],
        summary: 'Register a user (attributes and palm templates); a test key also receives a user token',
        security,
        body: mpcCreateBodySchema,
        response: { 201: successSchema(mpcCreatedSchema), ...vendorErrors(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const out = await createMpcUser(ctx, vendorOf(request), callerOf(request), request.body);
      request.idempotencyUser = out.userId; // a stored answer (Idempotency-Key) is sealed under their key
      return ok(reply, out.created, 201);
    },
  );

  app.post(
    '/api/v1/mpc/users/update',
    {
      config: vendorRoute,
      schema: {
        tags: ['users'],
        summary: "Update attributes of a user you created, or add palms with the user's confirmation code",
        security,
        body: mpcUpdateBodySchema,
        response: { 200: successSchema(mpcUpdatedSchema), ...vendorErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const out = await updateMpcUser(ctx, vendorOf(request), callerOf(request), request.body);
      request.idempotencyUser = out.userId; // a stored answer (Idempotency-Key) is sealed under their key
      return ok(reply, { user_id: request.body.user_id, updated: out.updated });
    },
  );

  app.post(
    '/api/v1/mpc/users/read',
    {
      // a replayed read is answered as it would be now: a consent revoked since is honoured
      config: { ...vendorRoute, idempotency: 'rerun' },
      schema: {
        tags: ['users'],
        summary: 'Read a user you created: only the attributes the user consented to share with you',
        security,
        body: mpcUserRefSchema,
        response: { 200: successSchema(mpcReadSchema), ...vendorErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const data = await readMpcUser(ctx, vendorOf(request), callerOf(request), request.body.user_id);
      return ok(reply, data);
    },
  );

  app.post(
    '/api/v1/mpc/users/delete',
    {
      config: vendorRoute,
      schema: {
        tags: ['users'],
        summary: 'Erase a user you created (same as the user’s own delete-me)',
        security,
        body: mpcUserRefSchema,
        response: { 200: successSchema(mpcDeletedSchema), ...vendorErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const { user_id } = request.body;
      await deleteMpcUser(ctx, vendorOf(request), callerOf(request), user_id);
      return ok(reply, { user_id, deleted: true as const });
    },
  );
};
