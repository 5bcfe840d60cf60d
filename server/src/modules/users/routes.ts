import { noQuerySchema } from '@palmid/contracts/api/attributes';
import { tokensRevokedSchema } from '@palmid/contracts/api/palms';
import { successSchema, USER_ROUTE_ERRORS } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { revokeAllTokens, revokeToken } from './service.ts';

const user = { auth: 'user', rate: 'user' } as const;
const security = [{ bearer: [] }];

/**
 * The user's tokens (docs/user-api.md, "Tokens"; docs/security.md, "Users control their credentials"):
 * `DELETE /v1/tokens/current` and `DELETE /v1/tokens` revoke the calling token or every token, refused
 * from the next request on. The palms' routes are modules/palms'.
 */
export const tokenRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  app.delete(
    '/v1/tokens/current',
    {
      config: user,
      schema: {
        tags: ['tokens'],
        security,
        summary: 'Revoke the token of this request (sign out); refused from the next request on',
        querystring: noQuerySchema,
        response: { 200: successSchema(tokensRevokedSchema), ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const u = userOf(request);
      const revoked = await revokeToken(ctx.database.db, u.id, u.tokenId, ctx.now());
      return ok(reply, { revoked });
    },
  );

  app.delete(
    '/v1/tokens',
    {
      config: user,
      schema: {
        tags: ['tokens'],
        security,
        summary: 'Revoke every token of your account, this one included (sign out everywhere)',
        querystring: noQuerySchema,
        response: { 200: successSchema(tokensRevokedSchema), ...USER_ROUTE_ERRORS },
      },
    },
    async (request, reply) => {
      const u = userOf(request);
      const revoked = await revokeAllTokens(ctx.database.db, u.id, ctx.now());
      return ok(reply, { revoked });
    },
  );
};
