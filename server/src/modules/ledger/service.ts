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

/** The ledger's part of an erasure (modules/gdpr): the user's transactions. */
export async function eraseLedgerOf(db: Db, ownerId: string): Promise<void> {
  await db.deleteFrom('ledger').where('owner_id', '=', ownerId).execute();
}
