import { noQuerySchema } from '@palmid/contracts/api/attributes';
import { consentParamsSchema, revokeConsentResponseSchema } from '@palmid/contracts/api/consents';
import { errorBodySchema, successSchema, USER_ROUTE_ERRORS } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { withdrawConsent } from './state.ts';

/**
 * `DELETE /v1/consents/{consent_id}` (docs/user-api.md): the user revokes a consent, and in the same
 * transaction the vendor's stored results lose the values the remaining consents no longer cover
 * (`withdrawConsent`, state.ts). The other consent routes are modules/consents'; this one is registered
 * right after them.
 */
export const consentWithdrawalRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  const common = { config: { auth: 'user' as const, rate: 'user' as const } };
  const tags = ['consents'];
  const security = [{ bearer: [] }];

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
