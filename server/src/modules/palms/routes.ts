import { noQuerySchema } from '@palmid/contracts/api/attributes';
import {
  palmConfirmationSchema,
  palmIdParamsSchema,
  palmListSchema,
  palmRemovedSchema,
} from '@palmid/contracts/api/palms';
import { errorBodySchema, successSchema, USER_ROUTE_ERRORS } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { callerOf, userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { confirmPalms, deletePalm, listPalms } from './service.ts';

const user = { auth: 'user', rate: 'user' } as const;
const security = [{ bearer: [] }];

/**
 * The user's palms (docs/user-api.md, "Palms"; docs/security.md, "Users control their credentials"):
 * `POST /v1/palms/confirm` gives a one-time code (10 minutes) that lets a kiosk (`enroll` with
 * `confirmation_code`) or the vendor that manages the account (`mpc/users/update`) add a palm;
 * `GET /v1/palms` lists the palms and where they were enrolled; `DELETE /v1/palms/{palm_id}` removes one
 * (audited; dropped from the gallery of every instance). The tokens' routes are modules/users'.
 */
export const palmRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  app.post(
    '/v1/palms/confirm',
    {
      config: user,
      schema: {
        tags: ['palms'],
        security,
        summary:
          'Get a one-time code (10 minutes) that lets a kiosk or your vendor add a palm to your account',
        querystring: noQuerySchema,
        response: {
          201: successSchema(palmConfirmationSchema),
          401: errorBodySchema,
          429: errorBodySchema,
        },
      },
    },
    async (request, reply) => {
      const u = userOf(request);
      const code = await confirmPalms(ctx, u.id);
      return ok(reply, code, 201);
    },
  );

  app.get(
    '/v1/palms',
    {
      config: user,
      schema: {
        tags: ['palms'],
        security,
        summary: 'List your palms: id, hand, when and where each was enrolled (never a template)',
        querystring: noQuerySchema,
        response: { 200: successSchema(palmListSchema), ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const u = userOf(request);
      const palms = await listPalms(ctx.database.db, u.id);
      reply.header('Cache-Control', 'no-store');
      return ok(reply, { palms });
    },
  );

  app.delete(
    '/v1/palms/:palm_id',
    {
      config: user,
      schema: {
        tags: ['palms'],
        security,
        summary: 'Remove one of your palms (audited); it no longer identifies you anywhere',
        params: palmIdParamsSchema,
        querystring: noQuerySchema,
        response: { 200: successSchema(palmRemovedSchema), 404: errorBodySchema, ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const u = userOf(request);
      const { palm_id } = request.params;
      await deletePalm(ctx, callerOf(request), u.id, palm_id);
      return ok(reply, { palm_id, removed: true as const });
    },
  );
};
