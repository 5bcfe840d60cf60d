import { randomBytes, randomUUID } from 'node:crypto';
import { ledgerId, vendorLedgerId } from '@palmid/contracts/crypto/ids';
import { AppError } from '@palmid/contracts/errors';
import type { AppContext, UserPrincipal } from '../../context.ts';
import { Keyring, open, seal } from '../../crypto/keyring.ts';
import {
  hashSecret,
  newClaimCode,
  newSecret,
  normaliseClaimCode,
  safeEqualHex,
} from '../../crypto/secrets.ts';
import { inBatches } from '../../db/batches.ts';
import type { Db } from '../../db/index.ts';
import { userStore } from './store.ts';

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
 * identifier is derived (docs/vendor-api.md, "Ledger"). The share is stored sealed under the data key and never leaves the server.
 */
export async function createUser(ctx: AppContext, db: Db, createdBy: string | null): Promise<CreatedUser> {
  const id = randomUUID();
  const now = ctx.now();
  const { dataKey, wrapped } = ctx.keyring.newDataKey(id);
  const share = randomBytes(32);
  const lid = ledgerId(share);
  await userStore(db).insertUser({
    id,
    created_by_vendor: createdBy,
    registration_date: now,
    ledger_id: lid,
    token_share_enc: seal(dataKey, share, `share:${id}`),
    wrapped_key: wrapped,
    last_auth: null,
    erased_at: null,
    palms_changed_at: null,
  });
  return { id, dataKey, ledgerId: lid, registrationDate: now };
}

export async function getUser(db: Db, id: string) {
  return userStore(db).getLive(id);
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

/**
 * The data key of each of several users, for sealing their audit records: a Buffer (live), 'erased', or
 * null (no such user: a row about a capture device).
 */
export async function dataKeysOf(
  db: Db,
  keyring: Keyring,
  userIds: string[],
): Promise<Map<string, Buffer | 'erased' | null>> {
  const out = new Map<string, Buffer | 'erased' | null>();
  const ids = [...new Set(userIds)];
  const rows = await userStore(db).keysOf(ids);
  for (const id of ids) {
    const row = rows.find((r) => r.id === id);
    if (!row) out.set(id, null);
    else if (row.erased_at !== null || !row.wrapped_key) out.set(id, 'erased');
    else out.set(id, keyring.unwrap(id, row.wrapped_key));
  }
  return out;
}

/**
 * The ledger id one vendor sees for a user (docs/vendor-api.md, "Ledger"): derived from the user's sealed
 * token share per vendor, so vendors cannot link a user by it. `users.ledger_id` stays internal (it groups a
 * user's transactions across vendors for export, erasure and the loyalty tier) and is never disclosed.
 */
export function ledgerIdFor(
  ctx: AppContext,
  user: { id: string; wrapped_key: Uint8Array | null; token_share_enc: Uint8Array | null },
  vendorId: string,
): string {
  if (!user.wrapped_key || !user.token_share_enc) throw new Error(`user ${user.id} has no token share`);
  const dataKey = ctx.keyring.unwrap(user.id, user.wrapped_key);
  return vendorLedgerId(open(dataKey, user.token_share_enc, `share:${user.id}`), vendorId);
}

export async function issueUserToken(ctx: Pick<AppContext, 'config' | 'now'>, db: Db, userId: string) {
  const token = newSecret('ut_');
  const now = ctx.now();
  const expiresAt = now + ctx.config.PALMID_TOKEN_TTL_DAYS * DAY_MS;
  await userStore(db).insertToken({
    id: randomUUID(),
    user_id: userId,
    token_hash: hashSecret(token),
    created_at: now,
    expires_at: expiresAt,
    revoked_at: null,
  });
  return { user_token: token, expires_at: new Date(expiresAt).toISOString() };
}

export async function authenticateUser(ctx: AppContext, header: unknown): Promise<UserPrincipal> {
  const unauthorized = (reason: string) =>
    new AppError('UNAUTHORIZED', 'Missing or invalid bearer token', { field: 'Authorization', reason });
  if (typeof header !== 'string' || header.length === 0) throw unauthorized('missing');
  const m = /^Bearer (ut_[A-Za-z0-9_-]{43})$/.exec(header);
  if (!m) throw unauthorized('invalid');
  const hash = hashSecret(m[1]!);
  const row = await userStore(ctx.database.db).tokenByHash(hash);
  if (!row || !safeEqualHex(row.token_hash, hash) || row.revoked_at !== null || row.erased_at !== null) {
    throw unauthorized('invalid');
  }
  if (Number(row.expires_at) <= ctx.now()) throw unauthorized('expired');
  return { id: row.user_id, tokenId: row.id };
}

export async function createClaimCode(ctx: AppContext, db: Db, userId: string) {
  const code = newClaimCode();
  const now = ctx.now();
  await userStore(db).insertClaimCode({
    code_hash: hashSecret(normaliseClaimCode(code)),
    user_id: userId,
    created_at: now,
    expires_at: now + CLAIM_TTL_MS,
    used_at: null,
  });
  return { claim_code: code, expires_at: new Date(now + CLAIM_TTL_MS).toISOString() };
}

/** One-time: a redeemed, expired or unknown code is the same 401. */
export async function redeemClaimCode(ctx: AppContext, db: Db, code: string) {
  const hash = hashSecret(normaliseClaimCode(code));
  const row = await userStore(db).claimCode(hash);
  const now = ctx.now();
  if (!row || row.used_at !== null || Number(row.expires_at) <= now || !(await getUser(db, row.user_id))) {
    throw new AppError('UNAUTHORIZED', 'Unknown, used or expired claim code', {
      field: 'claim_code',
      reason: 'invalid',
    });
  }
  if (!(await userStore(db).useClaimCode(hash, now))) {
    throw new AppError('UNAUTHORIZED', 'Unknown, used or expired claim code', {
      field: 'claim_code',
      reason: 'invalid',
    });
  }
  return { user_id: row.user_id, ...(await issueUserToken(ctx, db, row.user_id)) };
}

/** `POST /v1/session`: `redeemClaimCode` in a transaction of its own. */
export async function openSession(ctx: AppContext, code: string) {
  return ctx.database.db.transaction().execute((trx) => redeemClaimCode(ctx, trx, code));
}

export async function touchLastAuth(db: Db, userId: string, now: number): Promise<void> {
  await userStore(db).touchLastAuth(userId, now);
}

export async function palmsOf(db: Db, userId: string) {
  return userStore(db).palmsOf(userId);
}

/**
 * Removes one of the user's palms (`DELETE /v1/palms/{palm_id}`). Another user's palm is indistinguishable
 * from a missing one (404). The caller audits it, and drops it from the gallery after the commit.
 */
export async function removePalm(
  db: Db,
  userId: string,
  palmId: string,
  now: number,
): Promise<{ hand: string }> {
  const store = userStore(db);
  const row = await store.palmOf(userId, palmId);
  if (!row) throw new AppError('NOT_FOUND', 'Palm not found', { field: 'palm_id', reason: 'unknown' });
  await store.deletePalm(userId, palmId, now);
  return { hand: row.hand };
}

/** Revokes one token (`DELETE /v1/tokens/current`); refused from the next request on. */
export async function revokeToken(db: Db, userId: string, tokenId: string, now: number): Promise<number> {
  return userStore(db).revokeToken(userId, tokenId, now);
}

/** Revokes every live token of the user (`DELETE /v1/tokens`, `admin user token revoke`); returns how many. */
export async function revokeAllTokens(db: Db, userId: string, now: number): Promise<number> {
  return userStore(db).revokeAllTokens(userId, now);
}

/**
 * The id one vendor sees for a user (docs/vendor-api.md, "User ids"): a UUID v4 stable per (user,
 * vendor), made the first time the vendor needs one. The internal id never reaches a vendor.
 */
export async function vendorUserId(db: Db, vendorId: string, userId: string, now: number): Promise<string> {
  const store = userStore(db);
  const found = await store.vendorUserId(vendorId, userId);
  if (found !== undefined) return found;
  await store.insertVendorUserId({
    vendor_id: vendorId,
    user_id: userId,
    vendor_user_id: randomUUID(),
    created_at: now,
  });
  const made = await store.vendorUserId(vendorId, userId);
  if (made === undefined) throw new Error(`no vendor user id for ${vendorId}/${userId}`);
  return made;
}

/** The internal id behind an id this vendor was given; undefined for any other id (another vendor's too). */
export async function internalUserId(
  db: Db,
  vendorId: string,
  vendorUser: string,
): Promise<string | undefined> {
  return userStore(db).internalUserId(vendorId, vendorUser);
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
  /** where it is enrolled: `kiosk:<pvs_id>` or `vendor:<vendor_id>` (shown to the user in `GET /v1/palms`) */
  source: string | null = null,
): Promise<string> {
  ctx.matcher.validate(palm.template);
  const id = randomUUID();
  await userStore(db).insertPalm({
    id,
    user_id: userId,
    hand: palm.hand,
    template_enc: seal(dataKey, palm.template, `palm:${userId}:${id}`),
    created_at: ctx.now(),
    source,
  });
  return id;
}

/**
 * The users module's part of an erasure (GDPR art. 17; the whole of it is `eraseUser` in modules/gdpr): the
 * wrapped data key is destroyed first (crypto-shredding), then templates, tokens and claim codes are deleted (palm confirmation codes: modules/palms).
 * Returns the erased user's ledger identifier, for the ledger's part.
 */
export async function eraseUserRecord(db: Db, userId: string, now: number): Promise<{ ledgerId: string }> {
  const user = await requireUser(db, userId);
  // A tombstone: the row stays (its id marks the user erased for the gallery on every instance), but nothing
  // in it links the person to a vendor, a date or the ledger (docs/security.md, "Erasure leaves nothing
  // linkable"): the creating vendor, the registration date and the internal ledger id are dropped.
  const store = userStore(db);
  await store.tombstone(userId, {
    wrapped_key: null,
    token_share_enc: new Uint8Array(0),
    erased_at: now,
    created_by_vendor: null,
    registration_date: 0,
    ledger_id: `erased:${randomUUID()}`,
    last_auth: null,
    palms_changed_at: null,
  });
  await store.deleteDataOf(userId);
  return { ledgerId: user.ledger_id };
}

/** Progress of a master-key rotation step: how many rows were handled so far. */
export type RotationProgress = (what: string, done: number) => void;

/**
 * The users module's part of a master-key rotation (ops/rotate-master.ts): every wrapped data key is
 * unwrapped with the old key and wrapped with the new one, in batches, each one short transaction. A
 * compare-and-set on the old wrapped key lets a concurrent erasure win; rows the new key already opens are
 * skipped, so a rerun after an interruption finishes the work.
 */
export async function rewrapDataKeys(
  db: Db,
  from: Keyring,
  to: Keyring,
  batch: number,
  progress: RotationProgress,
): Promise<{ rewrapped: number; already: number; erased: number }> {
  const report = { rewrapped: 0, already: 0, erased: 0 };
  await inBatches(db, {
    batch,
    page: (after, limit) => userStore(db).keysAfter(after, limit),
    key: (r) => r.id,
    progress: (done) => progress('users', done),
    each: async (trx, r) => {
      if (!r.wrapped_key) {
        report.erased++;
        return;
      }
      if (Keyring.opens(() => to.unwrap(r.id, r.wrapped_key!))) {
        report.already++;
        return;
      }
      const wrapped = to.wrap(r.id, from.unwrap(r.id, r.wrapped_key));
      to.unwrap(r.id, wrapped); // prove the new wrapping before writing it
      if (await userStore(trx).replaceWrappedKey(r.id, r.wrapped_key, wrapped)) report.rewrapped++;
      else report.erased++;
    },
  });
  return report;
}

/** The oldest live user a vendor created (the development demo's user). */
export async function firstUserCreatedBy(db: Db, vendorId: string) {
  return userStore(db).firstCreatedBy(vendorId);
}
