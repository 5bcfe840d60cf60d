import { randomBytes, randomUUID } from 'node:crypto';
import { ledgerId } from '@palmid/shared/crypto/ids.ts';
import { AppError } from '@palmid/shared/errors.ts';
import type { AppContext, UserPrincipal } from '../../context.ts';
import { open, seal } from '../../crypto/keyring.ts';
import {
  hashSecret,
  newClaimCode,
  newSecret,
  normaliseClaimCode,
  safeEqualHex,
} from '../../crypto/secrets.ts';
import type { Db } from '../../db/index.ts';
import { eraseUserVerificationData } from '../verification/store.ts';

const DAY_MS = 86_400_000;
const CLAIM_TTL_MS = 15 * 60_000;

export interface CreatedUser {
  id: string;
  dataKey: Buffer;
  ledgerId: string;
  registrationDate: number;
}

/**
 * A user is a UUID v4, a random data key (stored wrapped) and a random token share from which the ledger
 * identifier is derived (SPEC §4.5). The share is stored sealed under the data key and never leaves the server.
 */
export async function createUser(ctx: AppContext, db: Db, createdBy: string | null): Promise<CreatedUser> {
  const id = randomUUID();
  const now = ctx.now();
  const { dataKey, wrapped } = ctx.keyring.newDataKey(id);
  const share = randomBytes(32);
  const lid = ledgerId(share);
  await db
    .insertInto('users')
    .values({
      id,
      created_by_vendor: createdBy,
      registration_date: now,
      ledger_id: lid,
      token_share_enc: seal(dataKey, share, `share:${id}`),
      wrapped_key: wrapped,
      last_auth: null,
      erased_at: null,
    })
    .execute();
  return { id, dataKey, ledgerId: lid, registrationDate: now };
}

export async function getUser(db: Db, id: string) {
  return db
    .selectFrom('users')
    .selectAll()
    .where('id', '=', id)
    .where('erased_at', 'is', null)
    .executeTakeFirst();
}

export async function requireUser(db: Db, id: string) {
  const user = await getUser(db, id);
  if (!user) throw new AppError('NOT_FOUND', 'User not found', { field: 'user_id', reason: 'unknown' });
  return user;
}

/** The user's data key, unwrapped for the duration of one operation. */
export async function dataKeyOf(ctx: AppContext, db: Db, userId: string): Promise<Buffer> {
  const user = await requireUser(db, userId);
  if (!user.wrapped_key)
    throw new AppError('NOT_FOUND', 'User not found', { field: 'user_id', reason: 'erased' });
  return ctx.keyring.unwrap(userId, user.wrapped_key);
}

export function sealFor(dataKey: Buffer, userId: string, field: string, value: unknown): Buffer {
  return seal(dataKey, Buffer.from(JSON.stringify(value), 'utf8'), `${field}:${userId}`);
}

export function openFor(dataKey: Buffer, userId: string, field: string, sealed: Uint8Array): unknown {
  return JSON.parse(open(dataKey, sealed, `${field}:${userId}`).toString('utf8'));
}

export async function issueUserToken(ctx: Pick<AppContext, 'config' | 'now'>, db: Db, userId: string) {
  const token = newSecret('ut_');
  const now = ctx.now();
  const expiresAt = now + ctx.config.PALMID_TOKEN_TTL_DAYS * DAY_MS;
  await db
    .insertInto('user_tokens')
    .values({
      id: randomUUID(),
      user_id: userId,
      token_hash: hashSecret(token),
      created_at: now,
      expires_at: expiresAt,
      revoked_at: null,
    })
    .execute();
  return { user_token: token, expires_at: new Date(expiresAt).toISOString() };
}

export async function authenticateUser(ctx: AppContext, header: unknown): Promise<UserPrincipal> {
  const unauthorized = (reason: string) =>
    new AppError('UNAUTHORIZED', 'Missing or invalid bearer token', { field: 'Authorization', reason });
  if (typeof header !== 'string' || header.length === 0) throw unauthorized('missing');
  const m = /^Bearer (ut_[A-Za-z0-9_-]{43})$/.exec(header);
  if (!m) throw unauthorized('invalid');
  const hash = hashSecret(m[1]!);
  const row = await ctx.database.db
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
    .where('user_tokens.token_hash', '=', hash)
    .executeTakeFirst();
  if (!row || !safeEqualHex(row.token_hash, hash) || row.revoked_at !== null || row.erased_at !== null) {
    throw unauthorized('invalid');
  }
  if (Number(row.expires_at) <= ctx.now()) throw unauthorized('expired');
  return { id: row.user_id, tokenId: row.id };
}

export async function createClaimCode(ctx: AppContext, db: Db, userId: string) {
  const code = newClaimCode();
  const now = ctx.now();
  await db
    .insertInto('claim_codes')
    .values({
      code_hash: hashSecret(normaliseClaimCode(code)),
      user_id: userId,
      created_at: now,
      expires_at: now + CLAIM_TTL_MS,
      used_at: null,
    })
    .execute();
  return { claim_code: code, expires_at: new Date(now + CLAIM_TTL_MS).toISOString() };
}

/** One-time: a redeemed, expired or unknown code is the same 401. */
export async function redeemClaimCode(ctx: AppContext, db: Db, code: string) {
  const hash = hashSecret(normaliseClaimCode(code));
  const row = await db.selectFrom('claim_codes').selectAll().where('code_hash', '=', hash).executeTakeFirst();
  const now = ctx.now();
  if (!row || row.used_at !== null || Number(row.expires_at) <= now || !(await getUser(db, row.user_id))) {
    throw new AppError('UNAUTHORIZED', 'Unknown, used or expired claim code', {
      field: 'claim_code',
      reason: 'invalid',
    });
  }
  const res = await db
    .updateTable('claim_codes')
    .set({ used_at: now })
    .where('code_hash', '=', hash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) {
    throw new AppError('UNAUTHORIZED', 'Unknown, used or expired claim code', {
      field: 'claim_code',
      reason: 'invalid',
    });
  }
  return { user_id: row.user_id, ...(await issueUserToken(ctx, db, row.user_id)) };
}

export async function touchLastAuth(db: Db, userId: string, now: number): Promise<void> {
  await db.updateTable('users').set({ last_auth: now }).where('id', '=', userId).execute();
}

export async function palmsOf(db: Db, userId: string) {
  return db.selectFrom('palms').select(['id', 'hand', 'created_at']).where('user_id', '=', userId).execute();
}

export async function palmRegistered(db: Db, userId: string): Promise<('left' | 'right')[]> {
  const hands = new Set((await palmsOf(db, userId)).map((p) => p.hand));
  return (['left', 'right'] as const).filter((h) => hands.has(h));
}

export async function addPalm(
  ctx: AppContext,
  db: Db,
  userId: string,
  dataKey: Buffer,
  palm: { hand: 'left' | 'right'; template: Uint8Array },
): Promise<string> {
  ctx.matcher.validate(palm.template);
  const id = randomUUID();
  await db
    .insertInto('palms')
    .values({
      id,
      user_id: userId,
      hand: palm.hand,
      template_enc: seal(dataKey, palm.template, `palm:${userId}:${id}`),
      created_at: ctx.now(),
    })
    .execute();
  return id;
}

/** Loads every enrolled palm into the in-memory gallery (at start-up). Templates are decrypted only here. */
export async function loadGallery(ctx: AppContext): Promise<number> {
  const db = ctx.database.db;
  const rows = await db
    .selectFrom('palms')
    .innerJoin('users', 'users.id', 'palms.user_id')
    .select(['palms.id', 'palms.user_id', 'palms.hand', 'palms.template_enc', 'users.wrapped_key'])
    .where('users.erased_at', 'is', null)
    .execute();
  const keys = new Map<string, Buffer>();
  for (const r of rows) {
    if (!r.wrapped_key) continue;
    let key = keys.get(r.user_id);
    if (!key) {
      key = ctx.keyring.unwrap(r.user_id, r.wrapped_key);
      keys.set(r.user_id, key);
    }
    const template = open(key, r.template_enc, `palm:${r.user_id}:${r.id}`);
    ctx.gallery.add({ palmId: r.id, userId: r.user_id, hand: r.hand, template: new Uint8Array(template) });
  }
  return rows.length;
}

/**
 * Erasure (GDPR art. 17): the wrapped data key is destroyed first (crypto-shredding), then templates,
 * attributes, consents, tokens, claim codes and ledger entries are deleted. Audit rows stay (ids only).
 */
export async function eraseUser(ctx: AppContext, db: Db, userId: string) {
  const user = await requireUser(db, userId);
  const now = ctx.now();
  await db
    .updateTable('users')
    .set({ wrapped_key: null, token_share_enc: new Uint8Array(0), erased_at: now })
    .where('id', '=', userId)
    .execute();
  await db.deleteFrom('palms').where('user_id', '=', userId).execute();
  await db.deleteFrom('attributes').where('user_id', '=', userId).execute();
  await db.deleteFrom('consents').where('user_id', '=', userId).execute();
  await db.deleteFrom('user_tokens').where('user_id', '=', userId).execute();
  await db.deleteFrom('claim_codes').where('user_id', '=', userId).execute();
  await db.deleteFrom('palm_confirmations').where('user_id', '=', userId).execute();
  await db.deleteFrom('ledger').where('ledger_user_id', '=', user.ledger_id).execute();
  await eraseUserVerificationData(db, userId);
  await db.updateTable('auth_contexts').set({ result_enc: null }).where('user_id', '=', userId).execute();
  return { deleted: true as const, deleted_at: new Date(now).toISOString() };
}

/** Called after the erasing transaction commits. */
export function forgetPalms(ctx: AppContext, userId: string): void {
  ctx.gallery.removeUser(userId);
  ctx.events.publish('gallery.changed', { userId, action: 'remove' });
}

/**
 * (Re)loads one user's palms into this instance's gallery: drops what the gallery holds for the user, then
 * adds every palm in the store (none if erased). Idempotent, so a repeated or late event cannot duplicate
 * palms. Used when another instance enrolled or updated the user.
 */
export async function loadUserPalms(ctx: AppContext, userId: string): Promise<number> {
  const rows = await ctx.database.db
    .selectFrom('palms')
    .innerJoin('users', 'users.id', 'palms.user_id')
    .select(['palms.id', 'palms.hand', 'palms.template_enc', 'users.wrapped_key'])
    .where('palms.user_id', '=', userId)
    .where('users.erased_at', 'is', null)
    .orderBy('palms.created_at')
    .execute();
  const entries = [];
  const wrapped = rows[0]?.wrapped_key;
  if (wrapped) {
    const key = ctx.keyring.unwrap(userId, wrapped);
    for (const r of rows) {
      const template = open(key, r.template_enc, `palm:${userId}:${r.id}`);
      entries.push({ palmId: r.id, userId, hand: r.hand, template: new Uint8Array(template) });
    }
  }
  ctx.gallery.removeUser(userId);
  for (const e of entries) ctx.gallery.add(e);
  return entries.length;
}

/**
 * Keeps this instance's gallery in step with enrolments and erasures made on other instances (events from
 * this instance are skipped: it already changed its gallery). Events arriving while `ready` (the start-up
 * gallery load) is pending are queued and applied after it, so none is lost or applied twice.
 */
export function syncGalleryWithPeers(
  ctx: AppContext,
  ready: Promise<unknown>,
  onError: (err: unknown) => void,
): () => void {
  let chain: Promise<unknown> = ready.catch(() => undefined);
  const then = (step: () => unknown) => {
    // Serialised per instance: an add followed quickly by a remove must not be applied out of order.
    chain = chain.then(step).catch(onError);
  };
  const offChanged = ctx.events.subscribe('gallery.changed', (e, meta) => {
    if (meta.origin === ctx.events.instanceId) return;
    then(async () => {
      if (e.action === 'remove') ctx.gallery.removeUser(e.userId);
      else await loadUserPalms(ctx, e.userId);
    });
  });
  const offResync = ctx.events.onResync((lostAt) => then(() => catchUpGallery(ctx, lostAt - CLOCK_SKEW_MS)));
  return () => {
    offChanged();
    offResync();
  };
}

/** Margin for clocks of different instances (palm and erasure times are written by whichever instance). */
const CLOCK_SKEW_MS = 60_000;

/**
 * Applies to this instance's gallery every enrolment and erasure the database recorded since `since`
 * (Unix ms): used when events from other instances may have been missed. Idempotent.
 */
export async function catchUpGallery(
  ctx: AppContext,
  since: number,
): Promise<{ removed: number; loaded: number }> {
  const db = ctx.database.db;
  const erased = await db.selectFrom('users').select('id').where('erased_at', '>=', since).execute();
  for (const u of erased) ctx.gallery.removeUser(u.id);
  const changed = await db
    .selectFrom('palms')
    .select('user_id')
    .distinct()
    .where('created_at', '>=', since)
    .execute();
  for (const p of changed) await loadUserPalms(ctx, p.user_id);
  return { removed: erased.length, loaded: changed.length };
}
