import type { AppContext } from '../../context.ts';
import { type Keyring, open, seal } from '../../crypto/keyring.ts';
import { inBatches } from '../../db/batches.ts';
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

/**
 * The kiosk answers' part of a master-key rotation (ops/rotate-master.ts): answers older than a day are
 * dropped rather than carried over; the others are re-sealed under the new key, each a compare-and-set on
 * the old ciphertext. Answers the new key already opens are counted as done.
 */
export async function resealAnswers(
  db: Db,
  from: Keyring,
  to: Keyring,
  now: number,
  batch: number,
): Promise<{ resealed: number; already: number; expired: number }> {
  const report = { resealed: 0, already: 0, expired: 0 };
  const dropped = await db
    .deleteFrom('idempotency')
    .where('created_at', '<', now - TTL_MS)
    .executeTakeFirst();
  report.expired = Number(dropped.numDeletedRows);
  const ctxAt = (keyring: Keyring) => ({ keyring, now: () => now }) as AppContext;
  await inBatches(db, {
    batch,
    page: (after, limit) =>
      db.selectFrom('idempotency').selectAll().where('key', '>', after).orderBy('key').limit(limit).execute(),
    key: (r) => r.key,
    each: async (trx, r) => {
      if (await recallAnswer(ctxAt(to), trx, r.key).catch(() => undefined)) {
        report.already++;
        return;
      }
      const answer = await recallAnswer(ctxAt(from), trx, r.key);
      const sealed = seal(to.derive('idempotency'), Buffer.from(JSON.stringify(answer), 'utf8'), r.key);
      await trx
        .updateTable('idempotency')
        .set({ response: sealed.toString('base64') })
        .where('key', '=', r.key)
        .where('response', '=', r.response)
        .execute();
      report.resealed++;
    },
  });
  return report;
}
