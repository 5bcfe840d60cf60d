import { auditListSchema, auditQuerySchema } from '@palmid/contracts/api/gdpr';
import { errorBodySchema, successSchema } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { listAudit } from './service.ts';

export const auditRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  app.get(
    '/v1/audit',
    {
      config: { auth: 'user', rate: 'user' },
      schema: {
        tags: ['audit'],
        security: [{ bearer: [] }],
        summary: "The user's own audit records, newest first",
        querystring: auditQuerySchema,
        response: {
          200: successSchema(auditListSchema),
          400: errorBodySchema,
          401: errorBodySchema,
          429: errorBodySchema,
        },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const records = await listAudit(ctx.database.db, ctx.keyring, user.id, request.query.limit ?? 1000);
      return ok(reply, { records });
    },
  );
};
