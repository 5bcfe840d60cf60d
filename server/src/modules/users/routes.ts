import { noQuerySchema } from '@palmid/contracts/api/attributes';
import {
  palmConfirmationSchema,
  palmIdParamsSchema,
  palmListSchema,
  palmRemovedSchema,
  tokensRevokedSchema,
} from '@palmid/contracts/api/palms';
import { errorBodySchema, successSchema, USER_ROUTE_ERRORS } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { callerOf, userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { confirmPalms, deletePalm, listPalms } from './palms.ts';
import { revokeAllTokens, revokeToken } from './service.ts';

const user = { auth: 'user', rate: 'user' } as const;
const security = [{ bearer: [] }];

/**
 * The user's credentials (docs/user-api.md, "Palms" and "Tokens"; docs/security.md, "Users control their
 * credentials"): `POST /v1/palms/confirm` gives a one-time code (10 minutes) that lets a kiosk
 * (`enroll` with `confirmation_code`) or the vendor that manages the account (`mpc/users/update`) add a
 * palm; `GET /v1/palms` lists the palms and where they were enrolled; `DELETE /v1/palms/{palm_id}` removes
 * one (audited; dropped from the gallery of every instance); `DELETE /v1/tokens/current` and
 * `DELETE /v1/tokens` revoke the calling token or every token, refused from the next request on.
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
