import type { Db } from '../../db/index.ts';
import type { AuditHeadTable, AuditTable } from '../../db/schema.ts';

/**
 * The audit module's tables: the hash-chained log (`audit`) and its signed head (`audit_head`, one row).
 * service.ts builds, seals and verifies the records; anchor.ts signs the head for outside keeping.
 */
export type AuditRow = AuditTable;
export type AuditHeadRow = AuditHeadTable;

/** The id of the one head row (migration 0002 seeds it). */
export const HEAD_ID = 1;

/** The personal fields an erasure empties (the chain covers their digest, not them). */
export interface ShreddedFields {
  user_id: string;
  vendor_id: null;
  ip_address: '';
  user_agent: '';
  personal_enc: null;
  personal_salt: null;
}

/** The audit log's store: every query on `audit` and `audit_head`. */
export interface AuditStore {
  /**
   * Takes the head row first: on PostgreSQL the no-op UPDATE row-locks it until commit, so writers on any
   * instance queue here; on SQLite it starts the write transaction.
   */
  lockHead(): Promise<void>;
  head(): Promise<AuditHeadRow | undefined>;
  insertHead(head: Omit<AuditHeadRow, 'id'>): Promise<void>;
  updateHead(head: Omit<AuditHeadRow, 'id'>): Promise<void>;
  setHeadMac(mac: string): Promise<void>;
  insert(row: AuditRow): Promise<void>;
  /** The user's records, newest first. */
  listOf(userId: string, limit: number): Promise<AuditRow[]>;
  /** Records after a sequence number, in order (the chain is walked in pages). */
  pageAfter(afterSeq: number, limit: number): Promise<AuditRow[]>;
  /** The hash of the record at `seq`, if there is one. */
  hashAt(seq: number): Promise<string | undefined>;
  /** Empties the personal fields of the user's records of hash version `hv`; how many rows changed. */
  shred(userId: string, hv: number, fields: ShreddedFields): Promise<number>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyAuditStore implements AuditStore {
  constructor(private readonly db: Db) {}

  async lockHead(): Promise<void> {
    await this.db
      .updateTable('audit_head')
      .set((eb) => ({ seq: eb.ref('seq') }))
      .where('id', '=', HEAD_ID)
      .execute();
  }

  async head(): Promise<AuditHeadRow | undefined> {
    return this.db.selectFrom('audit_head').selectAll().where('id', '=', HEAD_ID).executeTakeFirst();
  }

  async insertHead(head: Omit<AuditHeadRow, 'id'>): Promise<void> {
    await this.db
      .insertInto('audit_head')
      .values({ id: HEAD_ID, ...head })
      .execute();
  }

  async updateHead(head: Omit<AuditHeadRow, 'id'>): Promise<void> {
    await this.db.updateTable('audit_head').set(head).where('id', '=', HEAD_ID).execute();
  }

  async setHeadMac(mac: string): Promise<void> {
    await this.db.updateTable('audit_head').set({ mac }).where('id', '=', HEAD_ID).execute();
  }

  async insert(row: AuditRow): Promise<void> {
    await this.db.insertInto('audit').values(row).execute();
  }

  async listOf(userId: string, limit: number): Promise<AuditRow[]> {
    return this.db
      .selectFrom('audit')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('seq', 'desc')
      .limit(limit)
      .execute();
  }

  async pageAfter(afterSeq: number, limit: number): Promise<AuditRow[]> {
    return this.db
      .selectFrom('audit')
      .selectAll()
      .where('seq', '>', afterSeq)
      .orderBy('seq')
      .limit(limit)
      .execute();
  }

  async hashAt(seq: number): Promise<string | undefined> {
    const row = await this.db.selectFrom('audit').select(['hash']).where('seq', '=', seq).executeTakeFirst();
    return row?.hash;
  }

  async shred(userId: string, hv: number, fields: ShreddedFields): Promise<number> {
    const res = await this.db
      .updateTable('audit')
      .set(fields)
      .where('user_id', '=', userId)
      .where('hv', '=', hv)
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }
}

export const auditStore = (db: Db): AuditStore => new KyselyAuditStore(db);
