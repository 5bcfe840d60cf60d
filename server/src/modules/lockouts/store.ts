import type { Db } from '../../db/index.ts';

/**
 * The lockouts' store: every query on `kiosk_lockouts`, the kiosks, capture devices and API keys locked
 * after failed matches (service.ts counts the failures and decides).
 */
export interface LockoutStore {
  /** When the kiosk's lockout ends (0 when it has none). */
  lockedUntil(pvsId: string): Promise<number>;
  lock(pvsId: string, until: number): Promise<void>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyLockoutStore implements LockoutStore {
  constructor(private readonly db: Db) {}

  async lockedUntil(pvsId: string): Promise<number> {
    const row = await this.db
      .selectFrom('kiosk_lockouts')
      .select('locked_until')
      .where('pvs_id', '=', pvsId)
      .executeTakeFirst();
    return row ? Number(row.locked_until) : 0;
  }

  async lock(pvsId: string, until: number): Promise<void> {
    const values = { failures: '[]', locked_until: until };
    await this.db
      .insertInto('kiosk_lockouts')
      .values({ pvs_id: pvsId, ...values })
      .onConflict((oc) => oc.column('pvs_id').doUpdateSet(values))
      .execute();
  }
}

export const lockoutStore = (db: Db): LockoutStore => new KyselyLockoutStore(db);
