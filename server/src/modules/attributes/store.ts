import type { Db } from '../../db/index.ts';
import type { AttributesTable } from '../../db/schema.ts';

/** The attributes module's table: every query on `attributes` (values are sealed by service.ts). */

export type StoredRow = Pick<
  AttributesTable,
  | 'name'
  | 'kind'
  | 'value_enc'
  | 'client_encrypted'
  | 'valid_from'
  | 'valid_until'
  | 'verified_by'
  | 'updated_at'
>;

/** The attributes' store: every query on `attributes`. */
export interface AttributeStore {
  /** A user's stored rows, by name; only `names` when given. */
  rowsOf(userId: string, names?: string[]): Promise<StoredRow[]>;
  upsert(userId: string, name: string, row: Omit<StoredRow, 'name'>): Promise<void>;
  /** Deletes one row; false when there was none. */
  delete(userId: string, name: string): Promise<boolean>;
  /** Every value of the user (erasure). */
  deleteAllOf(userId: string): Promise<void>;
  /** Records who verified a stored value. */
  setVerifiedBy(userId: string, name: string, issuer: string): Promise<void>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyAttributeStore implements AttributeStore {
  constructor(private readonly db: Db) {}

  async rowsOf(userId: string, names?: string[]): Promise<StoredRow[]> {
    let q = this.db
      .selectFrom('attributes')
      .select([
        'name',
        'kind',
        'value_enc',
        'client_encrypted',
        'valid_from',
        'valid_until',
        'verified_by',
        'updated_at',
      ])
      .where('user_id', '=', userId);
    if (names) {
      if (names.length === 0) return [];
      q = q.where('name', 'in', names);
    }
    return q.orderBy('name').execute();
  }

  async upsert(userId: string, name: string, row: Omit<StoredRow, 'name'>): Promise<void> {
    await this.db
      .insertInto('attributes')
      .values({ user_id: userId, name, ...row })
      .onConflict((oc) => oc.columns(['user_id', 'name']).doUpdateSet(row))
      .execute();
  }

  async delete(userId: string, name: string): Promise<boolean> {
    const res = await this.db
      .deleteFrom('attributes')
      .where('user_id', '=', userId)
      .where('name', '=', name)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async deleteAllOf(userId: string): Promise<void> {
    await this.db.deleteFrom('attributes').where('user_id', '=', userId).execute();
  }

  async setVerifiedBy(userId: string, name: string, issuer: string): Promise<void> {
    await this.db
      .updateTable('attributes')
      .set({ verified_by: issuer })
      .where('user_id', '=', userId)
      .where('name', '=', name)
      .execute();
  }
}

export const attributeStore = (db: Db): AttributeStore => new KyselyAttributeStore(db);
