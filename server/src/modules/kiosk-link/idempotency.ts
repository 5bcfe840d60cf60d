import type { AppContext } from '../../context.ts';
import { type Keyring, open, seal } from '../../crypto/keyring.ts';
import { inBatches } from '../../db/batches.ts';
import type { Db } from '../../db/index.ts';
import { dataKeyOf } from '../users/service.ts';
import { kioskLinkStore } from './store.ts';

const TTL_MS = 24 * 3600_000;

/** Who an answer is about: its user and that user's data key. */
export interface AnswerOwner {
  userId: string;
  dataKey?: Buffer;
}

/**
 * Request ids of kiosk calls are idempotency keys: a replayed request (after a reconnect) gets the stored
 * answer instead of being applied twice. Answers may hold a claim code or disclosed attributes, so an
 * answer about a user is sealed under that user's data key (gone with `delete-me`: docs/user-api.md) and
 * erased with the user; one about nobody (a failed match) under the service's derived key.
 */
export async function recallAnswer(ctx: AppContext, db: Db, key: string): Promise<unknown | undefined> {
  const row = await kioskLinkStore(db).answer(key);
  if (!row || Number(row.created_at) < ctx.now() - TTL_MS) return undefined;
  let sealKey: Buffer;
  if (row.user_id === null) sealKey = ctx.keyring.derive('idempotency');
  else {
    const dataKey = await dataKeyOf(ctx, db, row.user_id).catch(() => undefined);
    if (!dataKey) return undefined; // the user was erased: nothing to replay
    sealKey = dataKey;
  }
  return JSON.parse(open(sealKey, Buffer.from(row.response, 'base64'), key).toString('utf8'));
}

export async function rememberAnswer(
  ctx: AppContext,
  db: Db,
  key: string,
  answer: unknown,
  owner?: AnswerOwner | null,
): Promise<void> {
  const sealKey = owner
    ? (owner.dataKey ?? (await dataKeyOf(ctx, db, owner.userId)))
    : ctx.keyring.derive('idempotency');
  const sealed = seal(sealKey, Buffer.from(JSON.stringify(answer), 'utf8'), key).toString('base64');
  await kioskLinkStore(db).insertAnswer({
    key,
    response: sealed,
    created_at: ctx.now(),
    user_id: owner?.userId ?? null,
  });
}

/** The user's stored kiosk answers, gone with the user (GDPR erasure, gdpr/service.ts). */
export async function eraseAnswersOf(db: Db, userId: string): Promise<void> {
  await kioskLinkStore(db).deleteAnswersOf(userId);
}

/** Drops answers past their day (run by the server's sweep); returns how many. */
export async function pruneAnswers(ctx: AppContext): Promise<number> {
  return kioskLinkStore(ctx.database.db).deleteAnswersBefore(ctx.now() - TTL_MS);
}

/**
 * The kiosk answers' part of a master-key rotation (ops/rotate-master.ts): answers older than a day are
 * dropped rather than carried over; the others are re-sealed under the new key, each a compare-and-set on
 * the old ciphertext. Answers the new key already opens are counted as done. Answers about a user are
 * sealed under the user's data key, which a rotation re-wraps but does not change: they stay as they are.
 */
export async function resealAnswers(
  db: Db,
  from: Keyring,
  to: Keyring,
  now: number,
  batch: number,
): Promise<{ resealed: number; already: number; expired: number }> {
  const report = { resealed: 0, already: 0, expired: 0 };
  const store = kioskLinkStore(db);
  report.expired = await store.deleteAnswersBefore(now - TTL_MS);
  // Vendors' stored answers (Idempotency-Key, below) under the service key are forgotten, not carried over:
  // a retry after a rotation is processed afresh.
  report.expired += await store.deleteServiceSealedVendorAnswers();
  const ctxAt = (keyring: Keyring) => ({ keyring, now: () => now }) as AppContext;
  await inBatches(db, {
    batch,
    page: (after, limit) => store.serviceSealedKioskAnswersAfter(after, limit),
    key: (r) => r.key,
    each: async (trx, r) => {
      if (await recallAnswer(ctxAt(to), trx, r.key).catch(() => undefined)) {
        report.already++;
        return;
      }
      const answer = await recallAnswer(ctxAt(from), trx, r.key);
      const sealed = seal(to.derive('idempotency'), Buffer.from(JSON.stringify(answer), 'utf8'), r.key);
      await kioskLinkStore(trx).replaceAnswer(r.key, r.response, { response: sealed.toString('base64') });
      report.resealed++;
    },
  });
  return report;
}

/**
 * Vendor `Idempotency-Key`s (docs/vendor-api.md, "Idempotency") share this table with the kiosks' request
 * ids, under keys `vendor:<api key id>:<Idempotency-Key>`. `response` is `<request hash>.<sealed answer>`:
 * the hash stays readable (a reuse with another body is told apart even when the answer's owner was erased),
 * and an empty sealed part marks a request still being processed.
 */
const IN_FLIGHT_MS = 60_000;

export type VendorKeyClaim =
  | { kind: 'fresh' }
  | { kind: 'in_use' }
  | { kind: 'reused' }
  | { kind: 'replay'; answer: { status: number; body: string } };

export async function claimVendorKey(ctx: AppContext, key: string, hash: string): Promise<VendorKeyClaim> {
  const db = ctx.database.db;
  const store = kioskLinkStore(db);
  const now = ctx.now();
  for (let tries = 0; tries < 3; tries++) {
    if (await store.insertAnswerIfNew({ key, response: `${hash}.`, created_at: now, user_id: null }))
      return { kind: 'fresh' };
    const row = await store.answer(key);
    if (!row) continue; // pruned or released in between
    const created = Number(row.created_at);
    const dot = row.response.indexOf('.');
    const storedHash = row.response.slice(0, dot);
    const sealed = row.response.slice(dot + 1);
    const stale = created < now - TTL_MS || (sealed === '' && created < now - IN_FLIGHT_MS);
    if (stale) {
      await store.deleteAnswer(key, row.response);
      continue;
    }
    if (storedHash !== hash) return { kind: 'reused' };
    if (sealed === '') return { kind: 'in_use' };
    let sealKey: Buffer | undefined;
    if (row.user_id === null) sealKey = ctx.keyring.derive('idempotency');
    else sealKey = await dataKeyOf(ctx, db, row.user_id).catch(() => undefined);
    // the person the answer was about was erased: it cannot be replayed, and the request is not redone
    if (!sealKey) return { kind: 'reused' };
    let answer: { status: number; body: string } | undefined;
    try {
      answer = JSON.parse(open(sealKey, Buffer.from(sealed, 'base64'), key).toString('utf8'));
    } catch {
      answer = undefined; // sealed under a key since rotated away: forgotten
    }
    if (!answer) {
      await store.deleteAnswer(key, row.response);
      continue;
    }
    return { kind: 'replay', answer };
  }
  return { kind: 'in_use' };
}

/** Stores the first answer to a claimed key (sealed under its person's data key when it is about one). */
export async function keepVendorAnswer(
  ctx: AppContext,
  key: string,
  hash: string,
  answer: { status: number; body: string },
  userId: string | null,
): Promise<void> {
  const db = ctx.database.db;
  const sealKey = userId
    ? await dataKeyOf(ctx, db, userId).catch(() => undefined)
    : ctx.keyring.derive('idempotency');
  const owner = sealKey && userId ? userId : null;
  const sealed = seal(sealKey ?? ctx.keyring.derive('idempotency'), Buffer.from(JSON.stringify(answer)), key);
  await kioskLinkStore(db).replaceAnswer(key, `${hash}.`, {
    response: `${hash}.${sealed.toString('base64')}`,
    user_id: owner,
  });
}

/** Lets a claimed key go (the request failed: a retry with the key is processed afresh). */
export async function releaseVendorKey(ctx: AppContext, key: string, hash: string): Promise<void> {
  await kioskLinkStore(ctx.database.db).deleteAnswer(key, `${hash}.`);
}
