import type { AppContext } from '../../context.ts';
import { open, seal } from '../../crypto/keyring.ts';
import type { Db } from '../../db/index.ts';

const TTL_MS = 24 * 3600_000;

/**
 * Request ids of kiosk calls are idempotency keys: a replayed request (after a reconnect) gets the stored
 * answer instead of being applied twice. Answers may hold a claim code, so they are stored sealed.
 */
export async function recallAnswer(ctx: AppContext, db: Db, key: string): Promise<unknown | undefined> {
  const row = await db
    .selectFrom('idempotency')
    .select(['response', 'created_at'])
    .where('key', '=', key)
    .executeTakeFirst();
  if (!row || Number(row.created_at) < ctx.now() - TTL_MS) return undefined;
  return JSON.parse(
    open(ctx.keyring.derive('idempotency'), Buffer.from(row.response, 'base64'), key).toString('utf8'),
  );
}

export async function rememberAnswer(ctx: AppContext, db: Db, key: string, answer: unknown): Promise<void> {
  const sealed = seal(
    ctx.keyring.derive('idempotency'),
    Buffer.from(JSON.stringify(answer), 'utf8'),
    key,
  ).toString('base64');
  await db.insertInto('idempotency').values({ key, response: sealed, created_at: ctx.now() }).execute();
}

export async function pruneAnswers(ctx: AppContext): Promise<void> {
  await ctx.database.db
    .deleteFrom('idempotency')
    .where('created_at', '<', ctx.now() - TTL_MS)
    .execute();
}
