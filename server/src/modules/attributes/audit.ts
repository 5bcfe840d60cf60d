import { AppError } from '@palmid/contracts/errors';
import type { AppContext, Caller } from '../../context.ts';
import type { Db } from '../../db/index.ts';
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
 * Records an update of a named attribute refused before it reached the service (UPDATE/ERROR, in a
 * transaction of its own); never fails: auditing a rejected request must not turn a 400 into a 500.
 */
export async function auditRejectedWrite(
  ctx: AppContext,
  caller: Caller,
  userId: string,
  name: string,
): Promise<void> {
  try {
    await ctx.database.db
      .transaction()
      .execute((trx) =>
        appendAudit(
          trx,
          ctx.keyring,
          caller,
          [{ userId, attributeName: name, operation: 'UPDATE', result: 'ERROR' }],
          ctx.now(),
        ),
      );
  } catch {
    // The original error is what the caller must see.
  }
}
