import { ATTRIBUTE_NAME } from '@palmid/contracts/api/attributes';
import { AppError } from '@palmid/contracts/errors';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext, Caller } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { callerOf } from '../../plugins/app/auth.ts';
import { type AuditOperation, appendAudit } from '../audit/service.ts';

/**
 * Runs one attribute operation in its own transaction and audits it (docs/attributes.md, "Audit": every attribute access).
 * Success is recorded in the same transaction as the work, one record per attribute touched. A failure
 * rolls the work back and is recorded afterwards in a transaction of its own: DENIED for a 403, ERROR for
 * anything else. A failure to write that record never hides the original error.
 */
export async function auditedAccess<T>(
  ctx: AppContext,
  caller: Caller,
  userId: string,
  operation: AuditOperation,
  work: (trx: Db) => Promise<T>,
  names: string[] | ((result: T) => string[]),
): Promise<T> {
  const now = ctx.now();
  try {
    return await ctx.database.db.transaction().execute(async (trx) => {
      const result = await work(trx);
      const touched = typeof names === 'function' ? names(result) : names;
      await appendAudit(
        trx,
        ctx.keyring,
        caller,
        touched.map((attributeName) => ({ userId, attributeName, operation, result: 'SUCCESS' as const })),
        now,
      );
      return result;
    });
  } catch (err) {
    const result = err instanceof AppError && err.code === 'FORBIDDEN' ? 'DENIED' : 'ERROR';
    const failed = typeof names === 'function' ? ['*'] : names;
    try {
      await ctx.database.db.transaction().execute((trx) =>
        appendAudit(
          trx,
          ctx.keyring,
          caller,
          failed.map((attributeName) => ({ userId, attributeName, operation, result })),
          now,
        ),
      );
    } catch {
      // The original error is what the caller must see.
    }
    throw err;
  }
}

/**
 * A PUT whose body never reaches the handler (malformed JSON, wrong content type, schema violation) is
 * still an attempted update of a named attribute by a known user: it is recorded as UPDATE/ERROR. Requests
 * without a valid token or with a malformed name are not attribute accesses and are not recorded.
 */
export function auditRejectedUpdate(ctx: AppContext) {
  return async (request: FastifyRequest, _reply: FastifyReply, error: FastifyError): Promise<void> => {
    const rejectedBeforeHandler =
      Boolean(error.validation) || (typeof error.code === 'string' && error.code.startsWith('FST_ERR_CTP'));
    const name = (request.params as { name?: unknown } | undefined)?.name;
    if (!rejectedBeforeHandler || !request.user || typeof name !== 'string' || !ATTRIBUTE_NAME.test(name))
      return;
    const user = request.user;
    try {
      await ctx.database.db
        .transaction()
        .execute((trx) =>
          appendAudit(
            trx,
            ctx.keyring,
            callerOf(request),
            [{ userId: user.id, attributeName: name, operation: 'UPDATE', result: 'ERROR' }],
            ctx.now(),
          ),
        );
    } catch {
      // Never let auditing a rejected request turn a 400 into a 500.
    }
  };
}
