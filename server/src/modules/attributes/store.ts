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

/** A user's stored rows, by name; only `names` when given. */
export async function storedRows(db: Db, userId: string, names?: string[]): Promise<StoredRow[]> {
  let q = db
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

export async function upsertRow(db: Db, userId: string, name: string, row: Omit<StoredRow, 'name'>) {
  await db
    .insertInto('attributes')
    .values({ user_id: userId, name, ...row })
    .onConflict((oc) => oc.columns(['user_id', 'name']).doUpdateSet(row))
    .execute();
}

/** Deletes one row; false when there was none. */
export async function deleteRow(db: Db, userId: string, name: string): Promise<boolean> {
  const res = await db
    .deleteFrom('attributes')
    .where('user_id', '=', userId)
    .where('name', '=', name)
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** The attributes module's part of an erasure (modules/gdpr): every value of the user. */
export async function eraseUserAttributes(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('attributes').where('user_id', '=', userId).execute();
}

/** Records who verified a stored value (an OIDC issuer, modules/verification). */
export async function markAttributeVerified(
  db: Db,
  userId: string,
  name: string,
  issuer: string,
): Promise<void> {
  await db
    .updateTable('attributes')
    .set({ verified_by: issuer })
    .where('user_id', '=', userId)
    .where('name', '=', name)
    .execute();
}
