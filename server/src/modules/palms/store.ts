import type { Db } from '../../db/index.ts';
import type { PalmConfirmationsTable } from '../../db/schema.ts';

/**
 * The palms module's table: `palm_confirmations`, the users' one-time codes that let a kiosk or a vendor add
 * a palm (service.ts hashes and checks them; the palms themselves are modules/users').
 */
export type PalmConfirmationRow = PalmConfirmationsTable;

/** The palms module's store: every query on `palm_confirmations`. */
export interface PalmStore {
  insertConfirmation(row: PalmConfirmationRow): Promise<void>;
  /** Deletes the confirmation codes expired before `now`. */
  pruneConfirmations(now: number): Promise<void>;
  confirmation(codeHash: string): Promise<PalmConfirmationRow | undefined>;
  /** Marks a code used if it was not (compare-and-set); false when it was. */
  useConfirmation(codeHash: string, now: number): Promise<boolean>;
  /** Erasure: every confirmation code of the user. */
  deleteConfirmationsOf(userId: string): Promise<void>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyPalmStore implements PalmStore {
  constructor(private readonly db: Db) {}

  async insertConfirmation(row: PalmConfirmationRow): Promise<void> {
    await this.db.insertInto('palm_confirmations').values(row).execute();
  }

  async pruneConfirmations(now: number): Promise<void> {
    await this.db.deleteFrom('palm_confirmations').where('expires_at', '<', now).execute();
  }

  async confirmation(codeHash: string): Promise<PalmConfirmationRow | undefined> {
    return this.db
      .selectFrom('palm_confirmations')
      .selectAll()
      .where('code_hash', '=', codeHash)
      .executeTakeFirst();
  }

  async useConfirmation(codeHash: string, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('palm_confirmations')
      .set({ used_at: now })
      .where('code_hash', '=', codeHash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async deleteConfirmationsOf(userId: string): Promise<void> {
    await this.db.deleteFrom('palm_confirmations').where('user_id', '=', userId).execute();
  }
}

export const palmStore = (db: Db): PalmStore => new KyselyPalmStore(db);
