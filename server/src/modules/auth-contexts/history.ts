import type { Db } from '../../db/index.ts';

export interface AuthHistoryItem {
  status: 'completed' | 'failed';
  at: number;
}

/** Resolved authentications attributed to a user (input of the computed risk_score). */
export async function authHistory(db: Db, userId: string, sinceMs: number): Promise<AuthHistoryItem[]> {
  const rows = await db
    .selectFrom('auth_contexts')
    .select(['status', 'updated_at'])
    .where('user_id', '=', userId)
    .where('updated_at', '>=', sinceMs)
    .where('status', 'in', ['completed', 'failed'])
    .orderBy('updated_at')
    .execute();
  return rows.map((r) => ({ status: r.status as 'completed' | 'failed', at: Number(r.updated_at) }));
}
