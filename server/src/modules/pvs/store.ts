import type { Db } from '../../db/index.ts';
import type { PvsTable } from '../../db/schema.ts';

/** The pvs module's table: registered kiosks and the hashes of their device tokens. */
export type PvsRow = PvsTable;
/** A kiosk as listed: every column but the token hash. */
export type PvsListing = Omit<PvsRow, 'token_hash'>;

/** The kiosks' store: every query on `pvs`. */
export interface PvsStore {
  insert(row: PvsRow): Promise<void>;
  get(id: string): Promise<PvsRow | undefined>;
  byTokenHash(tokenHash: string): Promise<PvsRow | undefined>;
  /** Every kiosk, oldest first. */
  list(): Promise<PvsListing[]>;
  /** Sets `revoked_at` if the kiosk is not yet revoked; false when it was (or is unknown). */
  markRevoked(id: string, now: number): Promise<boolean>;
  /** Revokes every active kiosk of that name. */
  markRevokedNamed(name: string, now: number): Promise<void>;
  touch(id: string, now: number): Promise<void>;
  /** Those of the ids that are not revoked. */
  activeAmong(ids: readonly string[]): Promise<string[]>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyPvsStore implements PvsStore {
  constructor(private readonly db: Db) {}

  async insert(row: PvsRow): Promise<void> {
    await this.db.insertInto('pvs').values(row).execute();
  }

  async get(id: string): Promise<PvsRow | undefined> {
    return this.db.selectFrom('pvs').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async byTokenHash(tokenHash: string): Promise<PvsRow | undefined> {
    return this.db.selectFrom('pvs').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  }

  async list(): Promise<PvsListing[]> {
    return this.db
      .selectFrom('pvs')
      .select(['id', 'name', 'vendor_id', 'created_at', 'last_seen', 'revoked_at'])
      .orderBy('created_at')
      .execute();
  }

  async markRevoked(id: string, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('pvs')
      .set({ revoked_at: now })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async markRevokedNamed(name: string, now: number): Promise<void> {
    await this.db
      .updateTable('pvs')
      .set({ revoked_at: now })
      .where('name', '=', name)
      .where('revoked_at', 'is', null)
      .execute();
  }

  async touch(id: string, now: number): Promise<void> {
    await this.db.updateTable('pvs').set({ last_seen: now }).where('id', '=', id).execute();
  }

  async activeAmong(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('pvs')
      .select('id')
      .where('id', 'in', ids)
      .where('revoked_at', 'is', null)
      .execute();
    return rows.map((r) => r.id);
  }
}

export const pvsStore = (db: Db): PvsStore => new KyselyPvsStore(db);
