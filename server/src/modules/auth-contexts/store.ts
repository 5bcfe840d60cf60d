import type { AuthStatus, AuthType } from '@palmid/contracts/api/auth-contexts';
import type { AuthHistoryItem } from '../../context.ts';
import type { Db, WriteBatch } from '../../db/index.ts';
import type { AuthContextsTable } from '../../db/schema.ts';

/**
 * An authentication context as the module works with it: the `auth_contexts` row mapped once, here, with
 * its JSON and numeric columns parsed. Only this file names the table.
 */
export interface AuthContext {
  id: string;
  vendorId: string;
  type: AuthType;
  amount: number | null;
  currency: string | null;
  minimumAge: number | null;
  /** `verified`: only a birth date vouched for by a verifier counts (docs/zk-proofs.md). */
  minimumAgeSource: 'any' | 'verified';
  attributesRequired: string[];
  attributesOptional: string[];
  /** the kiosk the context was addressed to; null = any kiosk serving the vendor */
  pvsId: string | null;
  status: AuthStatus;
  /** the result, sealed under the auth-results sub-key (state.ts); null until terminal or after erasure */
  resultEnc: Uint8Array | null;
  userId: string | null;
  createdAt: number;
  expiresAt: number;
  updatedAt: number;
  /** when the stored result must hold attribute names only (state.ts); null when it holds no value */
  valuesUntil: number | null;
}

/** What a transition changes (state.ts decides which transitions exist). */
export interface ContextChange {
  status: AuthStatus;
  resultEnc: Uint8Array | null;
  userId: string | null;
  updatedAt: number;
  valuesUntil: number | null;
}

/** The auth contexts' store: every query on `auth_contexts`. */
export interface AuthContextStore {
  insert(c: AuthContext): Promise<void>;
  /** Hands the row to a group commit, which inserts it with the group's (db/group-commit.ts). */
  stage(batch: WriteBatch, c: AuthContext): void;
  get(id: string): Promise<AuthContext | undefined>;
  /** Compare-and-set on the status: true if `c` was still in `c.status` and now holds `change`. */
  update(c: AuthContext, change: ContextChange): Promise<boolean>;
  /** Pending or scanning contexts not yet due, oldest first; of one vendor, or of all when null. */
  listOpen(vendorId: string | null, now: number, limit: number): Promise<AuthContext[]>;
  /** Pending or scanning contexts whose deadline passed. */
  listDue(now: number, limit: number): Promise<AuthContext[]>;
  /** Resolved contexts attributed to a user since a time (input of the computed risk_score). */
  history(userId: string, sinceMs: number): Promise<AuthHistoryItem[]>;
  /** Erasure: sealed results naming the user are dropped, and the contexts no longer name the user. */
  forgetResultsOf(userId: string): Promise<void>;
  /** Sealed results after an id, ordered by id (master-key rotation walks them in batches). */
  sealedResultsAfter(afterId: string, limit: number): Promise<{ id: string; resultEnc: Uint8Array }[]>;
  /** Compare-and-set on the old ciphertext. */
  replaceSealedResult(id: string, old: Uint8Array, sealed: Uint8Array): Promise<void>;
  /** Terminal contexts whose stored result still holds values past `values_until`. */
  listValuesDue(now: number, limit: number): Promise<AuthContext[]>;
  /** The contexts of one user at one vendor whose stored result holds values. */
  listWithValues(userId: string, vendorId: string): Promise<AuthContext[]>;
  /** Replaces a sealed result and its `values_until` (compare-and-set on the old ciphertext); true if done. */
  replaceResult(
    id: string,
    old: Uint8Array,
    sealed: Uint8Array,
    valuesUntil: number | null,
  ): Promise<boolean>;
  /** Several contexts by id in one query (status reads of one turn, lib/turn-batch.ts); unknown ids are left out. */
  getMany(ids: readonly string[]): Promise<AuthContext[]>;
}

function fromRow(row: AuthContextsTable): AuthContext {
  return {
    id: row.id,
    vendorId: row.vendor_id,
    type: row.type,
    amount: row.amount === null ? null : Number(row.amount),
    currency: row.currency,
    minimumAge: row.minimum_age === null ? null : Number(row.minimum_age),
    minimumAgeSource: row.minimum_age_source === 'verified' ? 'verified' : 'any',
    attributesRequired: JSON.parse(row.attributes_required) as string[],
    attributesOptional: JSON.parse(row.attributes_optional) as string[],
    pvsId: row.pvs_id,
    status: row.status,
    resultEnc: row.result_enc,
    userId: row.user_id,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    updatedAt: Number(row.updated_at),
    valuesUntil:
      row.values_until === null || row.values_until === undefined ? null : Number(row.values_until),
  };
}

function toRow(c: AuthContext): AuthContextsTable {
  return {
    id: c.id,
    vendor_id: c.vendorId,
    type: c.type,
    amount: c.amount,
    currency: c.currency,
    minimum_age: c.minimumAge,
    minimum_age_source: c.minimumAgeSource === 'verified' ? 'verified' : null,
    attributes_required: JSON.stringify(c.attributesRequired),
    attributes_optional: JSON.stringify(c.attributesOptional),
    pvs_id: c.pvsId,
    status: c.status,
    result_enc: c.resultEnc,
    user_id: c.userId,
    created_at: c.createdAt,
    expires_at: c.expiresAt,
    updated_at: c.updatedAt,
    values_until: c.valuesUntil,
  };
}

const OPEN: AuthStatus[] = ['pending', 'scanning'];

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyAuthContextStore implements AuthContextStore {
  constructor(private readonly db: Db) {}

  async insert(c: AuthContext): Promise<void> {
    await this.db.insertInto('auth_contexts').values(toRow(c)).execute();
  }

  stage(batch: WriteBatch, c: AuthContext): void {
    batch.insert('auth_contexts', toRow(c));
  }

  async get(id: string): Promise<AuthContext | undefined> {
    const row = await this.db.selectFrom('auth_contexts').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? fromRow(row) : undefined;
  }

  async update(c: AuthContext, change: ContextChange): Promise<boolean> {
    const res = await this.db
      .updateTable('auth_contexts')
      .set({
        status: change.status,
        result_enc: change.resultEnc,
        user_id: change.userId,
        updated_at: change.updatedAt,
        values_until: change.valuesUntil,
      })
      .where('id', '=', c.id)
      .where('status', '=', c.status)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async listOpen(vendorId: string | null, now: number, limit: number): Promise<AuthContext[]> {
    let q = this.db
      .selectFrom('auth_contexts')
      .selectAll()
      .where('status', 'in', OPEN)
      .where('expires_at', '>', now);
    if (vendorId !== null) q = q.where('vendor_id', '=', vendorId);
    return (await q.orderBy('created_at').limit(limit).execute()).map(fromRow);
  }

  async listDue(now: number, limit: number): Promise<AuthContext[]> {
    const rows = await this.db
      .selectFrom('auth_contexts')
      .selectAll()
      .where('status', 'in', OPEN)
      .where('expires_at', '<=', now)
      .limit(limit)
      .execute();
    return rows.map(fromRow);
  }

  async history(userId: string, sinceMs: number): Promise<AuthHistoryItem[]> {
    const rows = await this.db
      .selectFrom('auth_contexts')
      .select(['status', 'updated_at'])
      .where('user_id', '=', userId)
      .where('updated_at', '>=', sinceMs)
      .where('status', 'in', ['completed', 'failed'])
      .orderBy('updated_at')
      .execute();
    return rows.map((r) => ({ status: r.status as 'completed' | 'failed', at: Number(r.updated_at) }));
  }

  async forgetResultsOf(userId: string): Promise<void> {
    await this.db
      .updateTable('auth_contexts')
      .set({ result_enc: null, user_id: null, values_until: null })
      .where('user_id', '=', userId)
      .execute();
  }

  async sealedResultsAfter(afterId: string, limit: number) {
    const rows = await this.db
      .selectFrom('auth_contexts')
      .select(['id', 'result_enc'])
      .where('id', '>', afterId)
      .where('result_enc', 'is not', null)
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, resultEnc: r.result_enc! }));
  }

  async replaceSealedResult(id: string, old: Uint8Array, sealed: Uint8Array): Promise<void> {
    await this.db
      .updateTable('auth_contexts')
      .set({ result_enc: sealed })
      .where('id', '=', id)
      .where('result_enc', '=', old)
      .execute();
  }

  async listValuesDue(now: number, limit: number): Promise<AuthContext[]> {
    const rows = await this.db
      .selectFrom('auth_contexts')
      .selectAll()
      .where('values_until', '<=', now)
      .where('result_enc', 'is not', null)
      .limit(limit)
      .execute();
    return rows.map(fromRow);
  }

  async listWithValues(userId: string, vendorId: string): Promise<AuthContext[]> {
    const rows = await this.db
      .selectFrom('auth_contexts')
      .selectAll()
      .where('user_id', '=', userId)
      .where('vendor_id', '=', vendorId)
      .where('values_until', 'is not', null)
      .execute();
    return rows.map(fromRow);
  }

  async replaceResult(
    id: string,
    old: Uint8Array,
    sealed: Uint8Array,
    valuesUntil: number | null,
  ): Promise<boolean> {
    const res = await this.db
      .updateTable('auth_contexts')
      .set({ result_enc: sealed, values_until: valuesUntil })
      .where('id', '=', id)
      .where('result_enc', '=', old)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async getMany(ids: readonly string[]): Promise<AuthContext[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('auth_contexts').selectAll().where('id', 'in', ids).execute();
    return rows.map(fromRow);
  }
}

export const authContextStore = (db: Db): AuthContextStore => new KyselyAuthContextStore(db);
