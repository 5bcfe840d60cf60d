import { noQuerySchema } from '@palmid/shared/api/attributes.ts';
import { palmConfirmationSchema } from '@palmid/shared/api/palms.ts';
import { errorBodySchema, successSchema } from '@palmid/shared/envelope.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { issuePalmConfirmation } from './palms.ts';

/**
 * `POST /v1/palms/confirm`: the user's consent to a palm being added to their account. The one-time code
 * (valid 10 minutes) is typed in at a kiosk (`enroll` with `confirmation_code`) or handed to the vendor
 * that manages the account (`mpc/users/update` with `confirmation_code`). docs/security.md.
 */
export const palmRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  app.post(
    '/v1/palms/confirm',
    {
      config: { auth: 'user', rate: 'user' },
      schema: {
        tags: ['palms'],
        security: [{ bearer: [] }],
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
      const user = userOf(request);
      const code = await ctx.database.db
        .transaction()
        .execute((trx) => issuePalmConfirmation(ctx, trx, user.id));
      return ok(reply, code, 201);
    },
  );
};
