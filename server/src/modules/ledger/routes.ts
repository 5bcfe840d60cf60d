import { ledgerParamsSchema, ledgerQuerySchema, ledgerResponseSchema } from '@palmid/shared/api/ledger.ts';
import { AppError } from '@palmid/shared/errors.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { vendorOf } from '../../plugins/app/auth.ts';
import { MAX_RANGE_S, toHex, vendorKnowsLedgerId, vendorTransactions } from './service.ts';

export const ledgerRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;
  app.get(
    '/api/v1/ledger/transactions/:user_id',
    {
      config: { auth: 'vendor', scope: 'auth', rate: 'ledger' },
      schema: {
        tags: ['ledger'],
        summary:
          "The calling vendor's transactions of one user (ledger id), hex-encoded JSON, at most 90 days per request",
        security: [{ apiKey: [] }],
        params: ledgerParamsSchema,
        querystring: ledgerQuerySchema,
        response: { 200: ledgerResponseSchema },
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
      const ledgerUserId = request.params.user_id;
      if (!(await vendorKnowsLedgerId(db, vendor.id, ledgerUserId))) {
        throw new AppError('NOT_FOUND', 'No transactions of yours for this user', {
          field: 'user_id',
          reason: 'unknown',
        });
      }
      const txs = await vendorTransactions(db, vendor.id, ledgerUserId, from * 1000, to * 1000 + 999);
      return { transactions: txs.map(toHex) };
    },
  );
};
