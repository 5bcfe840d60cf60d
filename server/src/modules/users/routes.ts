import { noQuerySchema } from '@palmid/shared/api/attributes.ts';
import {
  type PalmItem,
  palmConfirmationSchema,
  palmIdParamsSchema,
  palmListSchema,
  palmRemovedSchema,
  tokensRevokedSchema,
} from '@palmid/shared/api/palms.ts';
import { errorBodySchema, successSchema, USER_ROUTE_ERRORS } from '@palmid/shared/envelope.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { callerOf, userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { findPvs } from '../pvs/service.ts';
import { getVendor } from '../vendors/service.ts';
import { loadUserPalms } from './gallery.ts';
import { auditPalm, issuePalmConfirmation } from './palms.ts';
import { palmsOf, removePalm, revokeAllTokens, revokeToken } from './service.ts';

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
      const code = await ctx.database.db
        .transaction()
        .execute((trx) => issuePalmConfirmation(ctx, trx, u.id));
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
      const db = ctx.database.db;
      const palms: PalmItem[] = [];
      for (const p of await palmsOf(db, u.id)) {
        const [kind, id] = p.source ? (p.source.split(/:(.*)/s) as [string, string]) : ['unknown', ''];
        let where: PalmItem['where'] = { kind: 'unknown', id: null, name: null };
        if (kind === 'kiosk') where = { kind, id, name: (await findPvs(db, id))?.name ?? null };
        else if (kind === 'vendor') where = { kind, id, name: (await getVendor(db, id))?.name ?? null };
        palms.push({
          palm_id: p.id,
          hand: p.hand,
          enrolled_at: new Date(Number(p.created_at)).toISOString(),
          where,
        });
      }
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
      await ctx.database.db.transaction().execute(async (trx) => {
        await removePalm(trx, u.id, palm_id, ctx.now());
        await auditPalm(ctx, trx, callerOf(request), u.id, null, 'SUCCESS', 'DELETE');
      });
      // After the commit: this instance's gallery reloads the user's palms, the others on the event.
      await loadUserPalms(ctx, u.id);
      ctx.events.publish('gallery.changed', { userId: u.id, action: 'update' });
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
