import type { Db } from '../../db/index.ts';
import { type AuthHistoryItem, authContextStore } from './store.ts';

export type { AuthHistoryItem };

/** Resolved authentications attributed to a user (input of the computed risk_score, modules/attributes). */
export async function authHistory(db: Db, userId: string, sinceMs: number): Promise<AuthHistoryItem[]> {
  return authContextStore(db).history(userId, sinceMs);
}
