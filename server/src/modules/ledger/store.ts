import type { Db } from '../../db/index.ts';
import type { LedgerTable } from '../../db/schema.ts';

/** The ledger module's table: every query on `ledger` (service.ts builds and decodes the transactions). */
export type LedgerRow = LedgerTable;

/** The ledger's store: every query on `ledger`. */
export interface LedgerStore {
  insert(row: LedgerRow): Promise<void>;
  /** The JSON of one vendor's transactions of one ledger id in a time range, oldest first. */
  vendorTransactions(vendorId: string, ledgerUserId: string, fromMs: number, toMs: number): Promise<string[]>;
  /** Whether the vendor has at least one transaction of this ledger id. */
  vendorKnows(vendorId: string, ledgerUserId: string): Promise<boolean>;
  /** The JSON of every transaction of a user since a time, oldest first. */
  userTransactions(ownerId: string, sinceMs: number): Promise<string[]>;
  deleteOf(ownerId: string): Promise<void>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyLedgerStore implements LedgerStore {
  constructor(private readonly db: Db) {}

  async insert(row: LedgerRow): Promise<void> {
    await this.db.insertInto('ledger').values(row).execute();
  }

  async vendorTransactions(vendorId: string, ledgerUserId: string, fromMs: number, toMs: number) {
    const rows = await this.db
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

  async vendorKnows(vendorId: string, ledgerUserId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('ledger')
      .select('id')
      .where('ledger_user_id', '=', ledgerUserId)
      .where('vendor_id', '=', vendorId)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  async userTransactions(ownerId: string, sinceMs: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('ledger')
      .select(['tx'])
      .where('owner_id', '=', ownerId)
      .where('timestamp', '>=', sinceMs)
      .orderBy('timestamp')
      .execute();
    return rows.map((r) => r.tx);
  }

  async deleteOf(ownerId: string): Promise<void> {
    await this.db.deleteFrom('ledger').where('owner_id', '=', ownerId).execute();
  }
}

export const ledgerStore = (db: Db): LedgerStore => new KyselyLedgerStore(db);
