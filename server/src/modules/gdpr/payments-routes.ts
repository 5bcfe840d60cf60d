import { paymentsListSchema, paymentsQuerySchema } from '@palmid/contracts/api/payments';
import { errorBodySchema, successSchema } from '@palmid/contracts/envelope';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { userOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { userPayments } from './payments.ts';

/** The user's own payment history (the portal's "Your payments"), newest first. */
export const paymentRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  app.get(
    '/v1/payments',
    {
      config: { auth: 'user', rate: 'user' },
      schema: {
        tags: ['payments'],
        security: [{ bearer: [] }],
        summary: "The user's own payments from the ledger, newest first",
        description:
          'Every payment context resolved with the user identified, completed or not: shop, amount in the ' +
          "currency's smallest unit, currency, result and time. Entrances and logins are not payments.",
        querystring: paymentsQuerySchema,
        response: {
          200: successSchema(paymentsListSchema),
          400: errorBodySchema,
          401: errorBodySchema,
          429: errorBodySchema,
        },
      },
    },
    async (request, reply) => {
      const user = userOf(request);
      const payments = await userPayments(ctx.database.db, user.id, request.query.limit ?? 100);
      return ok(reply, { payments });
    },
  );
};
