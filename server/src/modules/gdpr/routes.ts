import { noQuerySchema } from '@palmid/contracts/api/attributes';
import { deleteMeResponseSchema, exportQuerySchema, gdprExportSchema } from '@palmid/contracts/api/gdpr';
import { successSchema, USER_ROUTE_ERRORS } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { callerOf, userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { eraseOwnData, exportOwnData } from './service.ts';

export const gdprRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  const common = { config: { auth: 'user' as const, rate: 'user' as const } };
  const tags = ['gdpr'];
  const security = [{ bearer: [] }];

  app.get(
    '/v1/gdpr/export',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Everything held about the user (format=json inline, otherwise as a download)',
        querystring: exportQuerySchema,
        response: { 200: successSchema(gdprExportSchema), ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const data = await exportOwnData(ctx, callerOf(request), user.id);
      if (request.query.format !== 'json') {
        const day = data.exported_at.slice(0, 10);
        reply.header('Content-Disposition', `attachment; filename="palmid-export-${user.id}-${day}.json"`);
      }
      reply.header('Cache-Control', 'no-store');
      return ok(reply, data);
    },
  );

  app.delete(
    '/v1/gdpr/delete-me',
    {
      ...common,
      schema: {
        tags,
        security,
        summary:
          'Erase the user: data key destroyed, templates, attributes, consents, ledger entries deleted',
        querystring: noQuerySchema,
        response: { 200: successSchema(deleteMeResponseSchema), ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      return ok(reply, await eraseOwnData(ctx, callerOf(request), user.id));
    },
  );
};
