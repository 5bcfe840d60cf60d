import { randomUUID } from 'node:crypto';
import {
  CONSENT_DEFAULT_DAYS,
  CONSENT_MAX_DAYS,
  type Consent,
  type CreateConsentBody,
} from '@palmid/contracts/api/consents';
import { AppError } from '@palmid/contracts/errors';
import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import type { ConsentsTable } from '../../db/schema.ts';
import { getVendor } from '../vendors/service.ts';
import { consentStore } from './store.ts';

const DAY_MS = 86_400_000;

export interface ConsentGrant {
  consent_id: string;
  purpose: string;
  retention_days: number;
  audit_log: boolean;
  /** `<attr>_in_set`: the set consented to, or the fewest values a set must have. */
  values?: string[];
  min_set_size?: number;
}

type ConsentAttribute = Consent['attributes'][number];

function parseAttributes(json: string): ConsentAttribute[] {
  const parsed = JSON.parse(json) as unknown;
  return Array.isArray(parsed) ? (parsed as ConsentAttribute[]) : [];
}

function isActive(row: Pick<ConsentsTable, 'revoked_at' | 'expires_at'>, now: number): boolean {
  return row.revoked_at === null && Number(row.expires_at) > now;
}

function toConsent(row: ConsentsTable, now: number): Consent {
  return {
    consent_id: row.id,
    user_id: row.user_id,
    vendor_id: row.vendor_id,
    attributes: parseAttributes(row.attributes),
    granted_at: new Date(Number(row.granted_at)).toISOString(),
    expires_at: new Date(Number(row.expires_at)).toISOString(),
    revocable: row.revocable === 1,
    audit_log: row.audit_log === 1,
    status: row.revoked_at !== null ? 'revoked' : isActive(row, now) ? 'active' : 'expired',
    revoked_at: row.revoked_at === null ? null : new Date(Number(row.revoked_at)).toISOString(),
  };
}

/**
 * What a vendor may receive now: attribute name → the consent covering it. Only consents that are neither
 * revoked nor expired count. When several active consents name the same attribute, the most recently
 * granted one decides (purpose and retention as the user last agreed).
 */
export async function activeConsents(
  db: Db,
  userId: string,
  vendorId: string,
  now: number,
): Promise<Map<string, ConsentGrant>> {
  const rows = await consentStore(db).listActiveAt(userId, vendorId, now);
  const out = new Map<string, ConsentGrant>();
  for (const row of rows) {
    for (const a of parseAttributes(row.attributes)) {
      out.set(a.name, {
        consent_id: row.id,
        purpose: a.purpose,
        retention_days: a.retention_days,
        audit_log: row.audit_log === 1,
        ...(a.values !== undefined ? { values: a.values } : {}),
        ...(a.min_set_size !== undefined ? { min_set_size: a.min_set_size } : {}),
      });
    }
  }
  return out;
}

/** The user's consents, newest first; without `all` only the active ones. */
export async function listConsents(db: Db, userId: string, now: number, all = false): Promise<Consent[]> {
  const rows = await consentStore(db).listOf(userId, all ? undefined : now);
  return rows.map((r) => toConsent(r, now));
}

/**
 * Grants a vendor access to named attributes. Every access is audited whatever the consent says, so
 * `audit_log` is always true. Unknown vendor → 404; duplicate names, a past expiry or one more than
 * CONSENT_MAX_DAYS ahead → 400.
 */
export async function grantConsent(
  db: Db,
  userId: string,
  body: CreateConsentBody,
  now: number,
): Promise<Consent> {
  const seen = new Set<string>();
  body.attributes.forEach((a, i) => {
    if (seen.has(a.name))
      throw AppError.invalid(`attributes.${i}.name`, 'duplicate', `Attribute '${a.name}' is listed twice`);
    seen.add(a.name);
  });
  let expiresAt = now + CONSENT_DEFAULT_DAYS * DAY_MS;
  if (body.expires_at !== undefined) {
    expiresAt = Date.parse(body.expires_at);
    if (!(expiresAt > now))
      throw AppError.invalid('expires_at', 'in_past', 'expires_at must be in the future');
    if (expiresAt > now + CONSENT_MAX_DAYS * DAY_MS)
      throw AppError.invalid(
        'expires_at',
        'too_far',
        `expires_at must be at most ${CONSENT_MAX_DAYS} days from now`,
      );
  }
  if (!(await getVendor(db, body.vendor_id)))
    throw new AppError('NOT_FOUND', 'Unknown vendor', { field: 'vendor_id', reason: 'unknown' });
  const row: ConsentsTable = {
    id: randomUUID(),
    user_id: userId,
    vendor_id: body.vendor_id,
    attributes: JSON.stringify(
      body.attributes.map((a) => ({
        name: a.name,
        purpose: a.purpose,
        retention_days: a.retention_days,
        ...(a.values !== undefined ? { values: [...new Set(a.values)] } : {}),
        ...(a.min_set_size !== undefined ? { min_set_size: a.min_set_size } : {}),
      })),
    ),
    granted_at: now,
    expires_at: expiresAt,
    revocable: body.revocable === false ? 0 : 1,
    audit_log: 1,
    revoked_at: null,
  };
  await consentStore(db).insert(row);
  return toConsent(row, now);
}

/** `POST /v1/consents`: `grantConsent` in a transaction of its own. */
export async function grantOwnConsent(
  ctx: AppContext,
  userId: string,
  body: CreateConsentBody,
): Promise<Consent> {
  return ctx.database.db.transaction().execute((trx) => grantConsent(trx, userId, body, ctx.now()));
}

/**
 * Revokes one of the user's consents. Another user's consent is indistinguishable from a missing one
 * (404). Revoking twice returns the first revocation time; a non-revocable consent is 403. `vendorId` is the
 * consent's vendor (for the caller, not the answer).
 */
export async function revokeConsent(db: Db, userId: string, consentId: string, now: number) {
  const store = consentStore(db);
  const row = await store.getOf(userId, consentId);
  if (!row) throw new AppError('NOT_FOUND', 'Consent not found', { field: 'consent_id', reason: 'unknown' });
  if (row.revoked_at !== null)
    return {
      consent_id: row.id,
      revoked_at: new Date(Number(row.revoked_at)).toISOString(),
      vendorId: row.vendor_id,
    };
  if (row.revocable !== 1)
    throw new AppError('FORBIDDEN', 'This consent is not revocable', {
      field: 'consent_id',
      reason: 'not_revocable',
    });
  await store.markRevoked(consentId, now);
  return { consent_id: row.id, revoked_at: new Date(now).toISOString(), vendorId: row.vendor_id };
}

/** The consents module's part of an erasure (modules/gdpr): every consent of the user. */
export async function eraseUserConsents(db: Db, userId: string): Promise<void> {
  await consentStore(db).deleteOf(userId);
}
