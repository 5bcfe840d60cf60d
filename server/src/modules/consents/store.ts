import type { Db } from '../../db/index.ts';
import type { ConsentsTable } from '../../db/schema.ts';

/** The consents module's table (service.ts parses the attributes and decides what is active). */
export type ConsentRow = ConsentsTable;

/** The consents' store: every query on `consents`. */
export interface ConsentStore {
  /** The user's consents at one vendor in force at `now` (granted, neither revoked nor expired), oldest first. */
  listActiveAt(userId: string, vendorId: string, now: number): Promise<ConsentRow[]>;
  /** The user's consents, newest first; only those neither revoked nor expired at `activeAt` when given. */
  listOf(userId: string, activeAt?: number): Promise<ConsentRow[]>;
  insert(row: ConsentRow): Promise<void>;
  /** One of the user's consents (another user's is not found). */
  getOf(userId: string, consentId: string): Promise<ConsentRow | undefined>;
  /** Sets `revoked_at` if not yet revoked. */
  markRevoked(consentId: string, now: number): Promise<void>;
  deleteOf(userId: string): Promise<void>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyConsentStore implements ConsentStore {
  constructor(private readonly db: Db) {}

  async listActiveAt(userId: string, vendorId: string, now: number): Promise<ConsentRow[]> {
    return this.db
      .selectFrom('consents')
      .selectAll()
      .where('user_id', '=', userId)
      .where('vendor_id', '=', vendorId)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .where('granted_at', '<=', now)
      .orderBy('granted_at')
      .orderBy('id')
      .execute();
  }

  async listOf(userId: string, activeAt?: number): Promise<ConsentRow[]> {
    let q = this.db.selectFrom('consents').selectAll().where('user_id', '=', userId);
    if (activeAt !== undefined) q = q.where('revoked_at', 'is', null).where('expires_at', '>', activeAt);
    return q.orderBy('granted_at', 'desc').orderBy('id').execute();
  }

  async insert(row: ConsentRow): Promise<void> {
    await this.db.insertInto('consents').values(row).execute();
  }

  async getOf(userId: string, consentId: string): Promise<ConsentRow | undefined> {
    return this.db
      .selectFrom('consents')
      .selectAll()
      .where('id', '=', consentId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  async markRevoked(consentId: string, now: number): Promise<void> {
    await this.db
      .updateTable('consents')
      .set({ revoked_at: now })
      .where('id', '=', consentId)
      .where('revoked_at', 'is', null)
      .execute();
  }

  async deleteOf(userId: string): Promise<void> {
    await this.db.deleteFrom('consents').where('user_id', '=', userId).execute();
  }
}

export const consentStore = (db: Db): ConsentStore => new KyselyConsentStore(db);
