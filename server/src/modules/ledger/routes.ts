import { ledgerParamsSchema, ledgerQuerySchema, ledgerResponseSchema } from '@palmid/contracts/api/ledger';
import { AppError } from '@palmid/contracts/errors';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { errorReply, vendorErrors } from '../../lib/error-replies.ts';
import { vendorOf } from '../../plugins/app/auth.ts';
import { MAX_RANGE_S, toHex, vendorKnowsLedgerId, vendorTransactions } from './service.ts';

/** The id this route takes is easy to mix up with `auth_result.user_id` (docs/vendor-api.md "Ledger"). */
const LEDGER_ID_HINT =
  'Pass the ledger id of a completed payment, auth_result.ledger_id, not auth_result.user_id';

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
      const vendor = vendorOf(request);
      const { from } = request.query;
      const nowS = Math.floor(ctx.now() / 1000);
      const to = request.query.to ?? nowS;
      if (to < from) throw AppError.invalid('to', 'before_from', 'Invalid to: must not be before from');
      if (to - from > MAX_RANGE_S) {
        throw AppError.invalid(
          request.query.to === undefined ? 'from' : 'to',
          'range_too_large',
          'Invalid range: at most 90 days (7 776 000 s) per request',
        );
      }
      const db = ctx.database.db;
      const ledgerUserId = request.params.ledger_id;
      if (!(await vendorKnowsLedgerId(db, vendor.id, ledgerUserId))) {
        throw new AppError('NOT_FOUND', 'No transactions of yours for this user', {
          field: 'ledger_id',
          reason: 'unknown',
          hint: LEDGER_ID_HINT,
        });
      }
      const txs = await vendorTransactions(db, vendor.id, ledgerUserId, from * 1000, to * 1000 + 999);
      return { transactions: txs.map(toHex) };
    },
  );
};
