import { noQuerySchema } from '@palmid/contracts/api/attributes';
import { sessionBodySchema, sessionResponseSchema } from '@palmid/contracts/api/session';
import { errorBodySchema, successSchema } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ok } from '../../plugins/app/envelope.ts';
import { openSession } from '../users/service.ts';

/** Kiosk enrolment → user session: the one-time claim code is exchanged for a bearer token. */
export const sessionRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  app.post(
    '/v1/session',
    {
      config: { auth: 'none', rate: 'session' },
      schema: {
        tags: ['session'],
        summary: 'Redeem a kiosk claim code for a user token (open, rate-limited per IP)',
        querystring: noQuerySchema,
        body: sessionBodySchema,
        response: {
          200: successSchema(sessionResponseSchema),
          400: errorBodySchema,
          401: errorBodySchema,
          429: errorBodySchema,
          500: errorBodySchema,
        },
      },
    },
    async (request, reply) => {
      const session = await openSession(ctx, request.body.claim_code);
      return ok(reply, session);
    },
  );
};
