import type { Db } from '../../db/index.ts';
import type {
  ClaimCodesTable,
  PalmsTable,
  UsersTable,
  UserTokensTable,
  VendorUserIdsTable,
} from '../../db/schema.ts';

/**
 * The users module's tables: `users` (wrapped data keys), `user_tokens`, `claim_codes`, `palms` (sealed
 * templates) and `vendor_user_ids`. service.ts and gallery.ts seal, open and decide; only this file names
 * the tables. (The palm confirmation codes are modules/palms'.)
 */
export type UserRow = UsersTable;
export type UserTokenRow = UserTokensTable;
export type ClaimCodeRow = ClaimCodesTable;
export type PalmRow = PalmsTable;

/** What an erasure leaves of a user's row (a tombstone). */
export type UserTombstone = Omit<UserRow, 'id'>;

/** A token with its user's erasure mark, found by the token's hash (authentication). */
export interface TokenWithUser {
  id: string;
  user_id: string;
  token_hash: string;
  expires_at: number;
  revoked_at: number | null;
  erased_at: number | null;
}

/** A sealed template with its user's wrapped data key (the gallery opens them). */
export interface SealedPalm {
  id: string;
  user_id: string;
  hand: PalmRow['hand'];
  template_enc: Uint8Array;
  wrapped_key: Uint8Array | null;
}

/** The users' store: every query on the module's tables. */
export interface UserStore {
  insertUser(row: UserRow): Promise<void>;
  /** A user not erased. */
  getLive(id: string): Promise<UserRow | undefined>;
  /** Wrapped keys and erasure marks of several users (unknown ids are left out). */
  keysOf(ids: readonly string[]): Promise<Pick<UserRow, 'id' | 'wrapped_key' | 'erased_at'>[]>;
  touchLastAuth(id: string, now: number): Promise<void>;
  /** Overwrites a user's row with its erasure tombstone. */
  tombstone(id: string, row: UserTombstone): Promise<void>;
  /** Deletes every row of the other tables that names the user (erasure). */
  deleteDataOf(userId: string): Promise<void>;
  /** Users after an id, ordered by id, with their wrapped keys (master-key rotation walks them in batches). */
  keysAfter(afterId: string, limit: number): Promise<Pick<UserRow, 'id' | 'wrapped_key'>[]>;
  /** Compare-and-set on the old wrapped key; false when it changed (an erasure won). */
  replaceWrappedKey(id: string, old: Uint8Array, wrapped: Uint8Array): Promise<boolean>;
  /** The oldest live user a vendor created. */
  firstCreatedBy(vendorId: string): Promise<{ id: string } | undefined>;
  /** Users erased, or whose palms were removed, since a time. */
  erasedSince(since: number): Promise<string[]>;
  palmsChangedSince(since: number): Promise<string[]>;

  insertToken(row: UserTokenRow): Promise<void>;
  tokenByHash(tokenHash: string): Promise<TokenWithUser | undefined>;
  /** Revokes one live token of the user; how many were revoked (0 or 1). */
  revokeToken(userId: string, tokenId: string, now: number): Promise<number>;
  /** Revokes every live, unexpired token of the user; how many. */
  revokeAllTokens(userId: string, now: number): Promise<number>;

  insertClaimCode(row: ClaimCodeRow): Promise<void>;
  claimCode(codeHash: string): Promise<ClaimCodeRow | undefined>;
  /** Marks a code used if it was not (compare-and-set); false when it was. */
  useClaimCode(codeHash: string, now: number): Promise<boolean>;

  insertPalm(row: PalmRow): Promise<void>;
  /** The user's palms, oldest first (no template). */
  palmsOf(userId: string): Promise<Pick<PalmRow, 'id' | 'hand' | 'created_at' | 'source'>[]>;
  palmOf(userId: string, palmId: string): Promise<Pick<PalmRow, 'id' | 'hand'> | undefined>;
  /** Deletes one palm of the user and marks the user's palms changed. */
  deletePalm(userId: string, palmId: string, now: number): Promise<void>;
  /** Every palm of every live user (the start-up gallery load). */
  allSealedPalms(): Promise<SealedPalm[]>;
  /** One live user's palms, oldest first. */
  sealedPalmsOf(userId: string): Promise<SealedPalm[]>;
  /** Users with a palm enrolled since a time. */
  usersEnrolledSince(since: number): Promise<string[]>;

  vendorUserId(vendorId: string, userId: string): Promise<string | undefined>;
  /** Records the id a vendor sees for a user unless one exists. */
  insertVendorUserId(row: VendorUserIdsTable): Promise<void>;
  internalUserId(vendorId: string, vendorUserId: string): Promise<string | undefined>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyUserStore implements UserStore {
  constructor(private readonly db: Db) {}

  async insertUser(row: UserRow): Promise<void> {
    await this.db.insertInto('users').values(row).execute();
  }

  async getLive(id: string): Promise<UserRow | undefined> {
    return this.db
      .selectFrom('users')
      .selectAll()
      .where('id', '=', id)
      .where('erased_at', 'is', null)
      .executeTakeFirst();
  }

  async keysOf(ids: readonly string[]) {
    if (ids.length === 0) return [];
    return this.db
      .selectFrom('users')
      .select(['id', 'wrapped_key', 'erased_at'])
      .where('id', 'in', ids)
      .execute();
  }

  async touchLastAuth(id: string, now: number): Promise<void> {
    await this.db.updateTable('users').set({ last_auth: now }).where('id', '=', id).execute();
  }

  async tombstone(id: string, row: UserTombstone): Promise<void> {
    await this.db.updateTable('users').set(row).where('id', '=', id).execute();
  }

  async deleteDataOf(userId: string): Promise<void> {
    await this.db.deleteFrom('vendor_user_ids').where('user_id', '=', userId).execute();
    await this.db.deleteFrom('palms').where('user_id', '=', userId).execute();
    await this.db.deleteFrom('user_tokens').where('user_id', '=', userId).execute();
    await this.db.deleteFrom('claim_codes').where('user_id', '=', userId).execute();
  }

  async keysAfter(afterId: string, limit: number) {
    return this.db
      .selectFrom('users')
      .select(['id', 'wrapped_key'])
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .execute();
  }

  async replaceWrappedKey(id: string, old: Uint8Array, wrapped: Uint8Array): Promise<boolean> {
    const res = await this.db
      .updateTable('users')
      .set({ wrapped_key: wrapped })
      .where('id', '=', id)
      .where('wrapped_key', '=', old)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async firstCreatedBy(vendorId: string) {
    return this.db
      .selectFrom('users')
      .select('id')
      .where('created_by_vendor', '=', vendorId)
      .where('erased_at', 'is', null)
      .orderBy('registration_date')
      .executeTakeFirst();
  }

  async erasedSince(since: number): Promise<string[]> {
    const rows = await this.db.selectFrom('users').select('id').where('erased_at', '>=', since).execute();
    return rows.map((r) => r.id);
  }

  async palmsChangedSince(since: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('users')
      .select('id')
      .where('palms_changed_at', '>=', since)
      .execute();
    return rows.map((r) => r.id);
  }

  async insertToken(row: UserTokenRow): Promise<void> {
    await this.db.insertInto('user_tokens').values(row).execute();
  }

  async tokenByHash(tokenHash: string): Promise<TokenWithUser | undefined> {
    return this.db
      .selectFrom('user_tokens')
      .innerJoin('users', 'users.id', 'user_tokens.user_id')
      .select([
        'user_tokens.id',
        'user_tokens.user_id',
        'user_tokens.token_hash',
        'user_tokens.expires_at',
        'user_tokens.revoked_at',
        'users.erased_at',
      ])
      .where('user_tokens.token_hash', '=', tokenHash)
      .executeTakeFirst();
  }

  async revokeToken(userId: string, tokenId: string, now: number): Promise<number> {
    const res = await this.db
      .updateTable('user_tokens')
      .set({ revoked_at: now })
      .where('id', '=', tokenId)
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  async revokeAllTokens(userId: string, now: number): Promise<number> {
    const res = await this.db
      .updateTable('user_tokens')
      .set({ revoked_at: now })
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  async insertClaimCode(row: ClaimCodeRow): Promise<void> {
    await this.db.insertInto('claim_codes').values(row).execute();
  }

  async claimCode(codeHash: string): Promise<ClaimCodeRow | undefined> {
    return this.db.selectFrom('claim_codes').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();
  }

  async useClaimCode(codeHash: string, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('claim_codes')
      .set({ used_at: now })
      .where('code_hash', '=', codeHash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async insertPalm(row: PalmRow): Promise<void> {
    await this.db.insertInto('palms').values(row).execute();
  }

  async palmsOf(userId: string) {
    return this.db
      .selectFrom('palms')
      .select(['id', 'hand', 'created_at', 'source'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  async palmOf(userId: string, palmId: string) {
    return this.db
      .selectFrom('palms')
      .select(['id', 'hand'])
      .where('id', '=', palmId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  async deletePalm(userId: string, palmId: string, now: number): Promise<void> {
    await this.db.deleteFrom('palms').where('id', '=', palmId).where('user_id', '=', userId).execute();
    await this.db.updateTable('users').set({ palms_changed_at: now }).where('id', '=', userId).execute();
  }

  async allSealedPalms(): Promise<SealedPalm[]> {
    return this.db
      .selectFrom('palms')
      .innerJoin('users', 'users.id', 'palms.user_id')
      .select(['palms.id', 'palms.user_id', 'palms.hand', 'palms.template_enc', 'users.wrapped_key'])
      .where('users.erased_at', 'is', null)
      .execute();
  }

  async sealedPalmsOf(userId: string): Promise<SealedPalm[]> {
    return this.db
      .selectFrom('palms')
      .innerJoin('users', 'users.id', 'palms.user_id')
      .select(['palms.id', 'palms.user_id', 'palms.hand', 'palms.template_enc', 'users.wrapped_key'])
      .where('palms.user_id', '=', userId)
      .where('users.erased_at', 'is', null)
      .orderBy('palms.created_at')
      .execute();
  }

  async usersEnrolledSince(since: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('palms')
      .select('user_id')
      .distinct()
      .where('created_at', '>=', since)
      .execute();
    return rows.map((r) => r.user_id);
  }

  async vendorUserId(vendorId: string, userId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('vendor_user_ids')
      .select('vendor_user_id')
      .where('vendor_id', '=', vendorId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row?.vendor_user_id;
  }

  async insertVendorUserId(row: VendorUserIdsTable): Promise<void> {
    await this.db
      .insertInto('vendor_user_ids')
      .values(row)
      .onConflict((oc) => oc.columns(['vendor_id', 'user_id']).doNothing())
      .execute();
  }

  async internalUserId(vendorId: string, vendorUserId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('vendor_user_ids')
      .select('user_id')
      .where('vendor_id', '=', vendorId)
      .where('vendor_user_id', '=', vendorUserId)
      .executeTakeFirst();
    return row?.user_id;
  }
}

export const userStore = (db: Db): UserStore => new KyselyUserStore(db);
