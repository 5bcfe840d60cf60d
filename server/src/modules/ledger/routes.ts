import { ledgerParamsSchema, ledgerQuerySchema, ledgerResponseSchema } from '@palmid/contracts/api/ledger';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { errorReply, vendorErrors } from '../../lib/error-replies.ts';
import { vendorOf } from '../../plugins/app/auth.ts';
import { LEDGER_ID_HINT, vendorLedger } from './service.ts';

export const ledgerRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  app.get(
    '/api/v1/ledger/transactions/:ledger_id',
    {
      config: { auth: 'vendor', scope: 'auth', rate: 'ledger' },
      schema: {
        tags: ['ledger'],
        summary:
          "The calling vendor's transactions of one user (ledger id), hex-encoded JSON, at most 90 days per request",
        description:
          'The path takes the **ledger id** of a completed payment, `auth_result.ledger_id` (64 hex characters, ' +
          'a pseudonym per vendor and user), not `auth_result.user_id`: an unknown id answers 404 with ' +
          '`details.hint` saying so.',
        security: [{ apiKey: [] }],
        params: ledgerParamsSchema,
        querystring: ledgerQuerySchema,
        response: {
          200: ledgerResponseSchema,
          ...vendorErrors(400, 401, 403, 429),
          404: errorReply(404, {
            message: 'No transactions of yours for this user',
            details: { field: 'ledger_id', reason: 'unknown', hint: LEDGER_ID_HINT },
          }),
        },
      },
    },
    async (request) => {
      const { from, to } = request.query;
      const range = { from, to: to ?? Math.floor(ctx.now() / 1000), toGiven: to !== undefined };
      const txs = await vendorLedger(ctx.database.db, vendorOf(request).id, request.params.ledger_id, range);
      return { transactions: txs };
    },
  );
};
