import { noQuerySchema } from '@palmid/contracts/api/attributes';
import {
  consentListQuerySchema,
  consentListSchema,
  consentParamsSchema,
  consentSchema,
  createConsentBodySchema,
  revokeConsentResponseSchema,
} from '@palmid/contracts/api/consents';
import { errorBodySchema, successSchema, USER_ROUTE_ERRORS } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { withdrawConsent } from '../auth-contexts/state.ts';
import { grantOwnConsent, listConsents } from './service.ts';

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

  app.delete(
    '/v1/consents/:consent_id',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Revoke a consent (403 when it is not revocable)',
        params: consentParamsSchema,
        querystring: noQuerySchema,
        response: {
          200: successSchema(revokeConsentResponseSchema),
          403: errorBodySchema,
          404: errorBodySchema,
          ...USER_ROUTE_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const { vendorId, ...revoked } = await withdrawConsent(ctx, user.id, request.params.consent_id);
      return ok(reply, revoked);
    },
  );
};
