import {
  type AttributeKind,
  attributeKind,
  COMPUTED_NAMES,
  isReservedName,
  SYSTEM_NAMES,
} from '@palmid/contracts/api/attribute-catalogue';
import { ATTRIBUTE_NAME, type AttributeItem } from '@palmid/contracts/api/attributes';
import { AppError } from '@palmid/contracts/errors';
import type { AppContext, Caller } from '../../context.ts';
import { openFor, sealFor } from '../../crypto/keyring.ts';
import type { Db } from '../../db/index.ts';
import { userTransactions } from '../ledger/service.ts';
import { dataKeyOf, getUser, palmRegistered, vendorUserId } from '../users/service.ts';
import { auditedAccess } from './audit.ts';
import { ageInYears, LOYALTY_WINDOW_MS, loyaltyTier, RISK_WINDOW_MS, riskScore } from './computed.ts';
import { attributeStore, type StoredRow } from './store.ts';
import { isCalendarDate, validateAttributeValue, validateEncryptedValue } from './validate.ts';

export type { AttributeKind };
export { ATTRIBUTE_NAME, attributeKind };

type UserRow = NonNullable<Awaited<ReturnType<typeof getUser>>>;
export type AttributeStatus = AttributeItem['status'];

/** Temporal rule (docs/attributes.md, "Temporal attributes"): only a `valid` attribute is ever disclosed or used as an input. */
export function temporalStatus(
  row: { valid_from: number | null; valid_until: number | null },
  now: number,
): AttributeStatus {
  if (row.valid_from !== null && now < Number(row.valid_from)) return 'not_yet_valid';
  if (row.valid_until !== null && now >= Number(row.valid_until)) return 'expired';
  return 'valid';
}

const AAD_FIELD = 'attr';
const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());
const isoDate = (ms: number) => new Date(Number(ms)).toISOString().slice(0, 10);

/** Decrypts stored rows lazily: the data key is unwrapped once, and only when a row is opened. */
class Opener {
  #key: Buffer | undefined;
  constructor(
    private readonly ctx: AppContext,
    private readonly db: Db,
    private readonly userId: string,
  ) {}
  async open(row: StoredRow): Promise<unknown> {
    this.#key ??= await dataKeyOf(this.ctx, this.db, this.userId);
    return openFor(this.#key, this.userId, `${AAD_FIELD}:${row.name}`, row.value_enc);
  }
  async key(): Promise<Buffer> {
    this.#key ??= await dataKeyOf(this.ctx, this.db, this.userId);
    return this.#key;
  }
}

/** The birth date usable for computed attributes: stored, valid now, in plain form and well formed. */
async function usableBirthDate(opener: Opener, rows: StoredRow[], now: number): Promise<string | undefined> {
  const row = rows.find((r) => r.name === 'date_of_birth');
  if (!row || row.client_encrypted || temporalStatus(row, now) !== 'valid') return undefined;
  const value = await opener.open(row);
  return typeof value === 'string' && isCalendarDate(value) ? value : undefined;
}

/** The usable birth date, looked up (and decrypted) at most once and only if a computed value needs it. */
function birthDateOnce(opener: Opener, rows: StoredRow[], now: number): () => Promise<string | undefined> {
  let dob: Promise<string | undefined> | undefined;
  return () => {
    dob ??= usableBirthDate(opener, rows, now);
    return dob;
  };
}

async function systemValue(
  db: Db,
  user: UserRow,
  name: string,
  vendorId: string | undefined,
  now: number,
): Promise<unknown> {
  switch (name) {
    case 'user_id':
      // to a vendor, the id issued to that vendor; the internal id never leaves the service
      return vendorId === undefined ? user.id : vendorUserId(db, vendorId, user.id, now);
    case 'registration_date':
      return isoDate(user.registration_date);
    case 'palm_registered':
      return palmRegistered(db, user.id);
    case 'last_auth':
      return user.last_auth === null ? undefined : iso(user.last_auth);
    default:
      return undefined; // contextual names (pseudonym, payment) belong to an auth context
  }
}

async function computedValue(
  ctx: AppContext,
  db: Db,
  user: UserRow,
  name: string,
  birthDate: () => Promise<string | undefined>,
  now: number,
): Promise<unknown> {
  switch (name) {
    case 'is_adult': {
      const dob = await birthDate();
      return dob === undefined ? undefined : ageInYears(dob, now) >= 18;
    }
    case 'is_senior': {
      const dob = await birthDate();
      return dob === undefined ? undefined : ageInYears(dob, now) >= 65;
    }
    case 'loyalty_tier':
      return loyaltyTier(await userTransactions(db, user.ledger_id, now - LOYALTY_WINDOW_MS), now);
    case 'risk_score':
      return riskScore(await ctx.authHistory(db, user.id, now - RISK_WINDOW_MS), now);
    default:
      return undefined;
  }
}

/**
 * The current, valid values of the requested attributes of any kind, for disclosure to a vendor: stored
 * user/verified attributes decrypted (a client-encrypted value is returned as the client's string),
 * system and computed values derived now. Names without a value — unset, expired, not yet valid,
 * contextual (`pseudonym`, `payment`) or malformed — are absent. An unknown or erased user yields an
 * empty map. Writes no audit records: the caller records what it discloses. With `vendorId` (disclosure to
 * that vendor) `user_id` is the id issued to that vendor (docs/vendor-api.md, "User ids").
 */
export async function readAttributeValues(
  ctx: AppContext,
  db: Db,
  userId: string,
  names: string[],
  now: number,
  vendorId?: string,
): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  const wanted = [...new Set(names)].filter((n) => ATTRIBUTE_NAME.test(n));
  if (wanted.length === 0) return out;
  const user = await getUser(db, userId);
  if (!user?.wrapped_key) return out;
  const opener = new Opener(ctx, db, userId);
  const storedNames = wanted.filter((n) => {
    const kind = attributeKind(n);
    return kind === 'user' || kind === 'verified';
  });
  const needsDob = wanted.includes('is_adult') || wanted.includes('is_senior');
  if (needsDob && !storedNames.includes('date_of_birth')) storedNames.push('date_of_birth');
  const rows = await attributeStore(db).rowsOf(userId, storedNames);
  const birthDate = birthDateOnce(opener, rows, now);
  for (const name of wanted) {
    const kind = attributeKind(name);
    let value: unknown;
    if (kind === 'system') value = await systemValue(db, user, name, vendorId, now);
    else if (kind === 'computed') value = await computedValue(ctx, db, user, name, birthDate, now);
    else {
      const row = rows.find((r) => r.name === name);
      if (row && temporalStatus(row, now) === 'valid') value = await opener.open(row);
    }
    if (value !== undefined) out.set(name, value);
  }
  return out;
}

function storedItem(row: StoredRow, value: unknown, now: number): AttributeItem {
  return {
    name: row.name,
    kind: row.kind,
    value,
    encrypted: row.client_encrypted === 1,
    status: temporalStatus(row, now),
    updated_at: iso(row.updated_at),
    valid_from: iso(row.valid_from),
    valid_until: iso(row.valid_until),
    ...(row.verified_by ? { verified_by: row.verified_by } : {}),
  };
}

function derivedItem(name: string, kind: AttributeKind, value: unknown, updatedAt: string): AttributeItem {
  return {
    name,
    kind,
    value,
    encrypted: false,
    status: 'valid',
    updated_at: updatedAt,
    valid_from: null,
    valid_until: null,
  };
}

function systemUpdatedAt(user: UserRow, name: string): string {
  if (name === 'last_auth' && user.last_auth !== null) return iso(user.last_auth)!;
  return iso(user.registration_date)!;
}

function unknownUser(): AppError {
  return new AppError('NOT_FOUND', 'User not found', { field: 'user_id', reason: 'unknown' });
}

/**
 * Everything the user holds, for the user: system, stored (with expired and not-yet-valid ones marked by
 * `status`, values included — it is the user's own data) and computed attributes. Names without a value
 * are left out.
 */
export async function listAttributes(
  ctx: AppContext,
  db: Db,
  userId: string,
  now: number,
): Promise<AttributeItem[]> {
  const user = await getUser(db, userId);
  if (!user) throw unknownUser();
  const opener = new Opener(ctx, db, userId);
  const rows = await attributeStore(db).rowsOf(userId);
  const items: AttributeItem[] = [];
  for (const name of SYSTEM_NAMES) {
    const value = await systemValue(db, user, name, undefined, now);
    if (value !== undefined) items.push(derivedItem(name, 'system', value, systemUpdatedAt(user, name)));
  }
  for (const row of rows) items.push(storedItem(row, await opener.open(row), now));
  const birthDate = birthDateOnce(opener, rows, now);
  const computedAt = new Date(now).toISOString();
  for (const name of COMPUTED_NAMES) {
    const value = await computedValue(ctx, db, user, name, birthDate, now);
    if (value !== undefined) items.push(derivedItem(name, 'computed', value, computedAt));
  }
  return items;
}

/** One attribute as the user sees it; 404 when it has no value (an expired one is still shown). */
export async function getAttribute(
  ctx: AppContext,
  db: Db,
  userId: string,
  name: string,
  now: number,
): Promise<AttributeItem> {
  const user = await getUser(db, userId);
  if (!user) throw unknownUser();
  const kind = attributeKind(name);
  const notSet = () =>
    new AppError('NOT_FOUND', `Attribute '${name}' has no value`, { field: 'name', reason: 'not_set' });
  if (kind === 'system') {
    const value = await systemValue(db, user, name, undefined, now);
    if (value === undefined) throw notSet();
    return derivedItem(name, kind, value, systemUpdatedAt(user, name));
  }
  const opener = new Opener(ctx, db, userId);
  if (kind === 'computed') {
    const rows = await attributeStore(db).rowsOf(userId, ['date_of_birth']);
    const value = await computedValue(ctx, db, user, name, birthDateOnce(opener, rows, now), now);
    if (value === undefined) throw notSet();
    return derivedItem(name, kind, value, new Date(now).toISOString());
  }
  const [row] = await attributeStore(db).rowsOf(userId, [name]);
  if (!row) throw notSet();
  return storedItem(row, await opener.open(row), now);
}

/** Who vouches for a stored attribute (`verified_by`: a verifier's id), or null when self-asserted. */
export async function verifierOf(db: Db, userId: string, name: string): Promise<string | null> {
  const [row] = await attributeStore(db).rowsOf(userId, [name]);
  return row?.verified_by ?? null;
}

/**
 * The verified flags that vouch for a value (docs/attributes.md, "Verified flags"): when the value changes,
 * whoever writes it, the flag falls until a verifier sets it again.
 */
const VOUCHED_BY: Record<string, readonly string[]> = {
  email: ['email_verified'],
  legal_name: ['identity_verified'],
  date_of_birth: ['identity_verified'],
};

export interface AttributeWrite {
  name: string;
  value: unknown;
  /** The value is a client-encrypted string: stored as given, never validated or interpreted. */
  clientEncrypted?: boolean;
  validFrom?: number | null;
  validUntil?: number | null;
  /** Who vouches for a verified attribute (a vendor id or an identity provider); null for user writes. */
  verifiedBy?: string | null;
}

export interface WrittenAttribute {
  name: string;
  kind: AttributeKind;
  updated_at: string;
  valid_from: string | null;
  valid_until: string | null;
}

/** A write to a name only the service derives, or to a verified name by its user (docs/user-api.md). */
function reservedName(name: string, kind: AttributeKind): AppError {
  return new AppError(
    'FORBIDDEN',
    `Attribute '${name}' is reserved: only the service or a verifier sets it`,
    {
      field: 'name',
      reason: 'reserved_name',
      kind,
    },
  );
}

function readOnly(name: string, kind: AttributeKind): AppError {
  return new AppError('FORBIDDEN', `Attribute '${name}' is ${kind} and read-only for the user`, {
    field: 'name',
    reason: 'read_only',
    kind,
  });
}

/** The user's stored, valid, plain `country`, which selects the postal code pattern. */
async function storedCountry(opener: Opener, db: Db, userId: string, now: number) {
  const [row] = await attributeStore(db).rowsOf(userId, ['country']);
  if (!row || row.client_encrypted || temporalStatus(row, now) !== 'valid') return undefined;
  const value = await opener.open(row);
  return typeof value === 'string' ? value : undefined;
}

/**
 * Validates, encrypts under the user's data key and upserts one stored attribute. `as` says who writes:
 * a user may write only user attributes; a trusted writer (vendor update, identity-provider import) may
 * also write verified ones. System and computed attributes are never stored.
 */
export async function writeAttribute(
  ctx: AppContext,
  db: Db,
  userId: string,
  write: AttributeWrite,
  as: 'user' | 'trusted',
  now: number,
): Promise<WrittenAttribute> {
  const { name } = write;
  if (!ATTRIBUTE_NAME.test(name))
    throw new AppError('INVALID_REQUEST', 'Invalid attribute name', { field: 'name', reason: 'invalid' });
  // `constructor` is a property of every JavaScript object: a name a lookup could resolve through the
  // prototype chain is not stored (docs/attributes.md, "Names").
  if (name in Object.prototype)
    throw new AppError('INVALID_REQUEST', `'${name}' is not a usable attribute name`, {
      field: 'name',
      reason: 'invalid',
    });
  const kind = attributeKind(name);
  if (isReservedName(name) || (kind === 'verified' && as === 'user')) throw reservedName(name, kind);
  const validFrom = write.validFrom ?? null;
  const validUntil = write.validUntil ?? null;
  if (validUntil !== null && validFrom !== null && validUntil <= validFrom)
    throw AppError.invalid('valid_until', 'before_valid_from', 'valid_until must be later than valid_from');
  if (validUntil !== null && validUntil <= now)
    throw AppError.invalid('valid_until', 'in_past', 'valid_until must be in the future');
  if (!(await getUser(db, userId))) throw unknownUser();
  const opener = new Opener(ctx, db, userId);
  const value = write.clientEncrypted
    ? validateEncryptedValue(write.value)
    : validateAttributeValue(name, write.value, {
        now,
        country: name === 'postal_code' ? await storedCountry(opener, db, userId, now) : undefined,
      });
  const row = {
    kind: kind as 'user' | 'verified',
    value_enc: sealFor(await opener.key(), userId, `${AAD_FIELD}:${name}`, value),
    client_encrypted: write.clientEncrypted ? 1 : 0,
    valid_from: validFrom,
    valid_until: validUntil,
    verified_by: kind === 'verified' ? (write.verifiedBy ?? null) : null,
    updated_at: now,
  };
  const flags = Object.hasOwn(VOUCHED_BY, name) ? VOUCHED_BY[name]! : [];
  if (flags.length > 0) {
    // A verified flag vouches for the value it was given with: a changed value loses it.
    const [old] = await attributeStore(db).rowsOf(userId, [name]);
    const unchanged =
      old !== undefined &&
      Boolean(old.client_encrypted) === Boolean(write.clientEncrypted) &&
      JSON.stringify(await opener.open(old)) === JSON.stringify(value);
    if (!unchanged) for (const flag of flags) await attributeStore(db).delete(userId, flag);
  }
  await attributeStore(db).upsert(userId, name, row);
  return { name, kind, updated_at: iso(now)!, valid_from: iso(validFrom), valid_until: iso(validUntil) };
}

/** Removes one stored user attribute. System, verified and computed attributes are read-only (403). */
export async function deleteAttribute(db: Db, userId: string, name: string): Promise<void> {
  const kind = attributeKind(name);
  if (kind !== 'user') throw readOnly(name, kind);
  if (!(await attributeStore(db).delete(userId, name)))
    throw new AppError('NOT_FOUND', `Attribute '${name}' has no value`, { field: 'name', reason: 'not_set' });
}

/** The attributes module's part of an erasure (modules/gdpr): every value of the user. */
export async function eraseUserAttributes(db: Db, userId: string): Promise<void> {
  await attributeStore(db).deleteAllOf(userId);
}

/** Records who verified a stored value (an OIDC issuer, modules/verification). */
export async function markAttributeVerified(
  db: Db,
  userId: string,
  name: string,
  issuer: string,
): Promise<void> {
  await attributeStore(db).setVerifiedBy(userId, name, issuer);
}

/*
 * The user's own attribute API (`/v1/attributes`, docs/user-api.md): each call in a transaction of its
 * own, audited (./audit.ts: success with the work, a failure afterwards).
 */

/** `GET /v1/attributes`: every attribute of the user, each an audited read. */
export function listOwnAttributes(ctx: AppContext, caller: Caller, userId: string) {
  return auditedAccess(
    ctx,
    caller,
    userId,
    'READ',
    (trx) => listAttributes(ctx, trx, userId, ctx.now()),
    (items) => items.map((i) => i.name),
  );
}

/** `GET /v1/attributes/{name}`. */
export function getOwnAttribute(ctx: AppContext, caller: Caller, userId: string, name: string) {
  return auditedAccess(
    ctx,
    caller,
    userId,
    'READ',
    (trx) => getAttribute(ctx, trx, userId, name, ctx.now()),
    [name],
  );
}

/** `PUT /v1/attributes/{name}`: a user write. */
export function writeOwnAttribute(ctx: AppContext, caller: Caller, userId: string, write: AttributeWrite) {
  return auditedAccess(
    ctx,
    caller,
    userId,
    'UPDATE',
    (trx) => writeAttribute(ctx, trx, userId, write, 'user', ctx.now()),
    [write.name],
  );
}

/** `DELETE /v1/attributes/{name}`. */
export async function deleteOwnAttribute(ctx: AppContext, caller: Caller, userId: string, name: string) {
  await auditedAccess(ctx, caller, userId, 'DELETE', (trx) => deleteAttribute(trx, userId, name), [name]);
}
