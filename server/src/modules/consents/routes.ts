import { noQuerySchema } from '@palmid/contracts/api/attributes';
import {
  consentListQuerySchema,
  consentListSchema,
  consentSchema,
  createConsentBodySchema,
} from '@palmid/contracts/api/consents';
import { errorBodySchema, successSchema, USER_ROUTE_ERRORS } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { grantOwnConsent, listConsents } from './service.ts';

/**
 * The user's consents (docs/user-api.md): list and grant. Revoking one (`DELETE /v1/consents/{consent_id}`)
 * also drops what the vendor's stored results no longer may hold, so that route is auth-contexts'
 * (consent-routes.ts, registered right after these).
 */
export const consentRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  const common = { config: { auth: 'user' as const, rate: 'user' as const } };
  const tags = ['consents'];
  const security = [{ bearer: [] }];

  app.get(
    '/v1/consents',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: "The user's active consents (all=true adds revoked and expired ones)",
        querystring: consentListQuerySchema,
        response: { 200: successSchema(consentListSchema), ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const consents = await listConsents(ctx.database.db, user.id, ctx.now(), request.query.all === 'true');
      return ok(reply, { consents });
    },
  );

  app.post(
    '/v1/consents',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Grant a vendor access to named attributes',
        querystring: noQuerySchema,
        body: createConsentBodySchema,
        response: { 201: successSchema(consentSchema), 404: errorBodySchema, ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const consent = await grantOwnConsent(ctx, user.id, request.body);
      return ok(reply, consent, 201);
    },
  );
};
