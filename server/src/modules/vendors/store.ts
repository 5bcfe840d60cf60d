import type { Db } from '../../db/index.ts';
import type { ApiKeysTable, VendorsTable } from '../../db/schema.ts';

/** The vendors module's tables: `vendors` and their `api_keys` (hashes only; service.ts issues the keys). */
export type VendorRow = VendorsTable;
export type ApiKeyRow = ApiKeysTable;

/** An active or revoked key with its vendor, found by the key's hash (authentication). */
export interface KeyWithVendor {
  key_id: string;
  key_hash: string;
  status: ApiKeyRow['status'];
  id: string;
  name: string;
  url: string;
  mode: VendorRow['mode'];
  scopes: string;
}

/** The vendors' store: every query on `vendors` and `api_keys`. */
export interface VendorStore {
  insertVendor(row: VendorRow): Promise<void>;
  getVendor(id: string): Promise<VendorRow | undefined>;
  listVendors(): Promise<VendorRow[]>;
  findVendorByName(name: string): Promise<{ id: string } | undefined>;
  insertKey(row: ApiKeyRow): Promise<void>;
  /** Revokes every active key of the vendor; how many were. */
  revokeAllKeys(vendorId: string, now: number): Promise<number>;
  /** The hashes of the vendor's active keys. */
  activeKeyHashes(vendorId: string): Promise<string[]>;
  /** Makes the vendor's key with this hash active again; false when there is none. */
  reactivateKey(vendorId: string, keyHash: string): Promise<boolean>;
  keyByHash(keyHash: string): Promise<KeyWithVendor | undefined>;
  keyStatus(keyId: string): Promise<ApiKeyRow['status'] | undefined>;
  /** Those of the key ids that are active. */
  activeKeysAmong(keyIds: readonly string[]): Promise<string[]>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyVendorStore implements VendorStore {
  constructor(private readonly db: Db) {}

  async insertVendor(row: VendorRow): Promise<void> {
    await this.db.insertInto('vendors').values(row).execute();
  }

  async getVendor(id: string): Promise<VendorRow | undefined> {
    return this.db.selectFrom('vendors').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async listVendors(): Promise<VendorRow[]> {
    return this.db.selectFrom('vendors').selectAll().orderBy('created_at').execute();
  }

  async findVendorByName(name: string) {
    return this.db.selectFrom('vendors').select('id').where('name', '=', name).executeTakeFirst();
  }

  async insertKey(row: ApiKeyRow): Promise<void> {
    await this.db.insertInto('api_keys').values(row).execute();
  }

  async revokeAllKeys(vendorId: string, now: number): Promise<number> {
    const res = await this.db
      .updateTable('api_keys')
      .set({ status: 'revoked', revoked_at: now })
      .where('vendor_id', '=', vendorId)
      .where('status', '=', 'active')
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  async activeKeyHashes(vendorId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .select('key_hash')
      .where('vendor_id', '=', vendorId)
      .where('status', '=', 'active')
      .execute();
    return rows.map((r) => r.key_hash);
  }

  async reactivateKey(vendorId: string, keyHash: string): Promise<boolean> {
    const res = await this.db
      .updateTable('api_keys')
      .set({ status: 'active', revoked_at: null })
      .where('vendor_id', '=', vendorId)
      .where('key_hash', '=', keyHash)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async keyByHash(keyHash: string): Promise<KeyWithVendor | undefined> {
    return this.db
      .selectFrom('api_keys')
      .innerJoin('vendors', 'vendors.id', 'api_keys.vendor_id')
      .select([
        'api_keys.id as key_id',
        'api_keys.key_hash',
        'api_keys.status',
        'vendors.id',
        'vendors.name',
        'vendors.url',
        'vendors.mode',
        'vendors.scopes',
      ])
      .where('api_keys.key_hash', '=', keyHash)
      .executeTakeFirst();
  }

  async keyStatus(keyId: string): Promise<ApiKeyRow['status'] | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .select('status')
      .where('id', '=', keyId)
      .executeTakeFirst();
    return row?.status;
  }

  async activeKeysAmong(keyIds: readonly string[]): Promise<string[]> {
    if (keyIds.length === 0) return [];
    const rows = await this.db
      .selectFrom('api_keys')
      .select('id')
      .where('id', 'in', keyIds)
      .where('status', '=', 'active')
      .execute();
    return rows.map((r) => r.id);
  }
}

export const vendorStore = (db: Db): VendorStore => new KyselyVendorStore(db);
