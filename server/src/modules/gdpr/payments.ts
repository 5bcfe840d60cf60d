import type { Payment } from '@palmid/contracts/api/payments';
import type { Db } from '../../db/index.ts';
import { loadContexts } from '../auth-contexts/state.ts';
import { userTransactions } from '../ledger/service.ts';
import { getUser } from '../users/service.ts';

/**
 * The user's payments, newest first (GET /v1/payments, the portal's "Your payments"): the payment
 * transactions of the user's ledger, with the currency the transaction records (`{type: "currency"}`)
 * or, for older transactions, the one its context still holds.
 */
export async function userPayments(db: Db, userId: string, limit: number): Promise<Payment[]> {
  const user = await getUser(db, userId);
  if (!user) return [];
  const out: (Payment & { recorded: boolean })[] = [];
  for (const tx of (await userTransactions(db, user.ledger_id)).reverse()) {
    const payment = tx.attributes.find((a) => a.type === 'payment');
    if (!payment || typeof payment.context !== 'number') continue;
    const currency = tx.attributes.find((a) => a.type === 'currency')?.context;
    out.push({
      context_id: tx['context-id'],
      vendor_id: tx.vendor.id,
      amount: payment.context,
      currency: typeof currency === 'string' ? currency : null,
      recorded: typeof currency === 'string',
      result: tx.result.code,
      timestamp: new Date(tx.timestamp).toISOString(),
    });
    if (out.length >= limit) break;
  }
  const unknown = out.filter((p) => !p.recorded).map((p) => p.context_id);
  const contexts =
    unknown.length > 0 ? new Map((await loadContexts(db, unknown)).map((c) => [c.id, c])) : new Map();
  return out.map(({ recorded, ...p }) => ({
    ...p,
    currency: recorded ? p.currency : (contexts.get(p.context_id)?.currency ?? null),
  }));
}
