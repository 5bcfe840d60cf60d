import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/index.ts';

/** A ledger transaction (docs/vendor-api.md, "Ledger"), field names exactly as documented (hyphenated). */
export interface LedgerTransaction {
  'user-id': string;
  'context-id': string;
  attributes: { type: string; context: unknown }[];
  vendor: { id: string; url: string };
  timestamp: number;
  result: { code: string };
}

export const MAX_RANGE_S = 90 * 86_400;

/** `ownerId` is the user's internal ledger id; `tx['user-id']` the id the vendor sees (per vendor). */
export async function appendTransaction(db: Db, tx: LedgerTransaction, ownerId: string): Promise<void> {
  await db
    .insertInto('ledger')
    .values({
      id: randomUUID(),
      ledger_user_id: tx['user-id'],
      owner_id: ownerId,
      vendor_id: tx.vendor.id,
      context_id: tx['context-id'],
      timestamp: tx.timestamp,
      tx: JSON.stringify(tx),
    })
    .execute();
}

/** The hex of the UTF-8 JSON of each transaction (docs/vendor-api.md, "Ledger"). */
export function toHex(txJson: string): string {
  return Buffer.from(txJson, 'utf8').toString('hex');
}

export async function vendorTransactions(
  db: Db,
  vendorId: string,
  ledgerUserId: string,
  fromMs: number,
  toMs: number,
) {
  const rows = await db
    .selectFrom('ledger')
    .select(['tx'])
    .where('ledger_user_id', '=', ledgerUserId)
    .where('vendor_id', '=', vendorId)
    .where('timestamp', '>=', fromMs)
    .where('timestamp', '<=', toMs)
    .orderBy('timestamp')
    .orderBy('id')
    .execute();
  return rows.map((r) => r.tx);
}

export async function vendorKnowsLedgerId(db: Db, vendorId: string, ledgerUserId: string): Promise<boolean> {
  const row = await db
    .selectFrom('ledger')
    .select('id')
    .where('ledger_user_id', '=', ledgerUserId)
    .where('vendor_id', '=', vendorId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Every transaction of a user, decoded, oldest first (GDPR export, loyalty tier). */
export async function userTransactions(db: Db, ownerId: string, sinceMs = 0): Promise<LedgerTransaction[]> {
  const rows = await db
    .selectFrom('ledger')
    .select(['tx'])
    .where('owner_id', '=', ownerId)
    .where('timestamp', '>=', sinceMs)
    .orderBy('timestamp')
    .execute();
  return rows.map((r) => JSON.parse(r.tx) as LedgerTransaction);
}

/**
 * The user's payments, newest first (GET /v1/payments): the ledger's payment transactions of the user,
 * the currency from the transaction's `currency` attribute where it records one, else from the context
 * (while it is kept).
 */
export async function userPayments(db: Db, userId: string, limit: number) {
  const rows = await db
    .selectFrom('ledger')
    .innerJoin('users', 'users.ledger_id', 'ledger.owner_id')
    .leftJoin('auth_contexts', 'auth_contexts.id', 'ledger.context_id')
    .select(['ledger.tx as tx', 'auth_contexts.currency as currency'])
    .where('users.id', '=', userId)
    .orderBy('ledger.timestamp', 'desc')
    .orderBy('ledger.id', 'desc')
    .execute();
  const out: {
    context_id: string;
    vendor_id: string;
    amount: number;
    currency: string | null;
    result: string;
    timestamp: string;
  }[] = [];
  for (const r of rows) {
    const tx = JSON.parse(r.tx) as LedgerTransaction;
    const payment = tx.attributes.find((a) => a.type === 'payment');
    if (!payment || typeof payment.context !== 'number') continue;
    const recorded = tx.attributes.find((a) => a.type === 'currency')?.context;
    out.push({
      context_id: tx['context-id'],
      vendor_id: tx.vendor.id,
      amount: payment.context,
      currency: typeof recorded === 'string' ? recorded : (r.currency ?? null),
      result: tx.result.code,
      timestamp: new Date(tx.timestamp).toISOString(),
    });
    if (out.length >= limit) break;
  }
  return out;
}

/** The ledger's part of an erasure (modules/gdpr): the user's transactions. */
export async function eraseLedgerOf(db: Db, ownerId: string): Promise<void> {
  await db.deleteFrom('ledger').where('owner_id', '=', ownerId).execute();
}
