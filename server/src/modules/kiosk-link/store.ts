import type { Db } from '../../db/index.ts';
import type { IdempotencyTable } from '../../db/schema.ts';

/**
 * The kiosk link's table: stored answers to kiosk request ids and vendor `Idempotency-Key`s
 * (`idempotency`, sealed by idempotency.ts). The kiosks' lockouts are modules/lockouts'.
 */
export type AnswerRow = IdempotencyTable;

export type AnswerChange = Pick<AnswerRow, 'response'> & Partial<Pick<AnswerRow, 'user_id'>>;

/** The kiosk link's store: every query on `idempotency`. */
export interface KioskLinkStore {
  answer(key: string): Promise<AnswerRow | undefined>;
  insertAnswer(row: AnswerRow): Promise<void>;
  /** Inserts unless the key exists; false when it did. */
  insertAnswerIfNew(row: AnswerRow): Promise<boolean>;
  /** Compare-and-set on the old `response`; `user_id` stays unless given. */
  replaceAnswer(key: string, oldResponse: string, row: AnswerChange): Promise<void>;
  /** Deletes the answer if its `response` is still `response`. */
  deleteAnswer(key: string, response: string): Promise<void>;
  deleteAnswersOf(userId: string): Promise<void>;
  /** Deletes the answers created before a time; how many. */
  deleteAnswersBefore(before: number): Promise<number>;
  /** Deletes the vendors' answers sealed under the service key; how many. */
  deleteServiceSealedVendorAnswers(): Promise<number>;
  /** Kiosk answers about nobody (sealed under the service key) after a key, ordered by key. */
  serviceSealedKioskAnswersAfter(afterKey: string, limit: number): Promise<AnswerRow[]>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyKioskLinkStore implements KioskLinkStore {
  constructor(private readonly db: Db) {}

  async answer(key: string): Promise<AnswerRow | undefined> {
    return this.db.selectFrom('idempotency').selectAll().where('key', '=', key).executeTakeFirst();
  }

  async insertAnswer(row: AnswerRow): Promise<void> {
    await this.db.insertInto('idempotency').values(row).execute();
  }

  async insertAnswerIfNew(row: AnswerRow): Promise<boolean> {
    const inserted = await this.db
      .insertInto('idempotency')
      .values(row)
      .onConflict((oc) => oc.column('key').doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async replaceAnswer(key: string, oldResponse: string, row: AnswerChange) {
    await this.db
      .updateTable('idempotency')
      .set(row)
      .where('key', '=', key)
      .where('response', '=', oldResponse)
      .execute();
  }

  async deleteAnswer(key: string, response: string): Promise<void> {
    await this.db.deleteFrom('idempotency').where('key', '=', key).where('response', '=', response).execute();
  }

  async deleteAnswersOf(userId: string): Promise<void> {
    await this.db.deleteFrom('idempotency').where('user_id', '=', userId).execute();
  }

  async deleteAnswersBefore(before: number): Promise<number> {
    const res = await this.db.deleteFrom('idempotency').where('created_at', '<', before).executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  async deleteServiceSealedVendorAnswers(): Promise<number> {
    const res = await this.db
      .deleteFrom('idempotency')
      .where('key', 'like', 'vendor:%')
      .where('user_id', 'is', null)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  async serviceSealedKioskAnswersAfter(afterKey: string, limit: number): Promise<AnswerRow[]> {
    return this.db
      .selectFrom('idempotency')
      .selectAll()
      .where('key', '>', afterKey)
      .where('user_id', 'is', null)
      .where('key', 'not like', 'vendor:%')
      .orderBy('key')
      .limit(limit)
      .execute();
  }
}

export const kioskLinkStore = (db: Db): KioskLinkStore => new KyselyKioskLinkStore(db);
