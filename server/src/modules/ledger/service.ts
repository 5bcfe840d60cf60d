import { randomUUID } from 'node:crypto';
import { AppError } from '@palmid/contracts/errors';
import type { Db } from '../../db/index.ts';
import { ledgerStore } from './store.ts';

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
  await ledgerStore(db).insert({
    id: randomUUID(),
    ledger_user_id: tx['user-id'],
    owner_id: ownerId,
    vendor_id: tx.vendor.id,
    context_id: tx['context-id'],
    timestamp: tx.timestamp,
    tx: JSON.stringify(tx),
  });
}

/** The hex of the UTF-8 JSON of each transaction (docs/vendor-api.md, "Ledger"). */
export function toHex(txJson: string): string {
  return Buffer.from(txJson, 'utf8').toString('hex');
}

/** The id the ledger route takes is easy to mix up with `auth_result.user_id` (docs/vendor-api.md "Ledger"). */
export const LEDGER_ID_HINT =
  'Pass the ledger id of a completed payment, auth_result.ledger_id, not auth_result.user_id';

/**
 * `GET /api/v1/ledger/transactions/:ledger_id`: the vendor's transactions of one ledger id between `from`
 * and `to` (seconds, both included), hex-encoded. `toGiven` says which field a too large range blames.
 */
export async function vendorLedger(
  db: Db,
  vendorId: string,
  ledgerUserId: string,
  range: { from: number; to: number; toGiven: boolean },
): Promise<string[]> {
  const { from, to } = range;
  if (to < from) throw AppError.invalid('to', 'before_from', 'Invalid to: must not be before from');
  if (to - from > MAX_RANGE_S) {
    throw AppError.invalid(
      range.toGiven ? 'to' : 'from',
      'range_too_large',
      'Invalid range: at most 90 days (7 776 000 s) per request',
    );
  }
  const store = ledgerStore(db);
  if (!(await store.vendorKnows(vendorId, ledgerUserId))) {
    throw new AppError('NOT_FOUND', 'No transactions of yours for this user', {
      field: 'ledger_id',
      reason: 'unknown',
      hint: LEDGER_ID_HINT,
    });
  }
  const txs = await store.vendorTransactions(vendorId, ledgerUserId, from * 1000, to * 1000 + 999);
  return txs.map(toHex);
}

/** Every transaction of a user, decoded, oldest first (GDPR export, loyalty tier). */
export async function userTransactions(db: Db, ownerId: string, sinceMs = 0): Promise<LedgerTransaction[]> {
  const rows = await ledgerStore(db).userTransactions(ownerId, sinceMs);
  return rows.map((tx) => JSON.parse(tx) as LedgerTransaction);
}

/** The ledger's part of an erasure (modules/gdpr): the user's transactions. */
export async function eraseLedgerOf(db: Db, ownerId: string): Promise<void> {
  await ledgerStore(db).deleteOf(ownerId);
}
