import { randomUUID } from 'node:crypto';
import { AppError } from '@palmid/contracts/errors';
import type { Environment } from '../../config.ts';
import { VENDOR_SCOPES, type VendorPrincipal, type VendorScope } from '../../context.ts';
import { hashSecret, newSecret, safeEqualHex } from '../../crypto/secrets.ts';
import type { Db } from '../../db/index.ts';
import { vendorStore } from './store.ts';

export { VENDOR_SCOPES, type VendorScope };

const API_KEY = /^sk_(test|live)_[A-Za-z0-9_-]{43}$/;

export interface NewVendor {
  name: string;
  url?: string | undefined;
  mode?: 'test' | 'live' | undefined;
  scopes?: VendorScope[] | undefined;
}

async function issueKey(
  db: Db,
  vendorId: string,
  mode: 'test' | 'live',
  now: number,
  apiKey = newSecret(`sk_${mode}_`),
): Promise<string> {
  await vendorStore(db).insertKey({
    id: randomUUID(),
    vendor_id: vendorId,
    key_hash: hashSecret(apiKey),
    prefix: apiKey.slice(0, 12),
    status: 'active',
    created_at: now,
    revoked_at: null,
  });
  return apiKey;
}

/** A vendor URL appears in every ledger transaction (docs/vendor-api.md "Ledger"): http(s) only. */
function checkVendorUrl(url: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') || !parsed.hostname) {
    throw AppError.invalid(
      'url',
      'invalid_format',
      `Invalid url '${url}': must be an http(s) URL such as https://my.shop`,
    );
  }
}

export async function createVendor(db: Db, input: NewVendor, now = Date.now()) {
  if (input.url) checkVendorUrl(input.url);
  const id = randomUUID();
  const mode = input.mode ?? 'test';
  const scopes = input.scopes ?? [...VENDOR_SCOPES];
  await vendorStore(db).insertVendor({
    id,
    name: input.name,
    url: input.url ?? '',
    mode,
    scopes: scopes.join(','),
    created_at: now,
  });
  const apiKey = await issueKey(db, id, mode, now);
  return { vendor_id: id, name: input.name, mode, scopes, api_key: apiKey };
}

export async function getVendor(db: Db, id: string) {
  return vendorStore(db).getVendor(id);
}

export async function listVendors(db: Db) {
  return vendorStore(db).listVendors();
}

async function requireVendor(db: Db, id: string) {
  const vendor = await getVendor(db, id);
  if (!vendor) throw new AppError('NOT_FOUND', `No vendor ${id}`, { field: 'vendor_id', reason: 'unknown' });
  return vendor;
}

async function revokeAll(db: Db, vendorId: string, now: number): Promise<number> {
  return vendorStore(db).revokeAllKeys(vendorId, now);
}

/** Replaces every active key of the vendor by one new key; the old ones stop working at once. */
export async function rotateKey(db: Db, vendorId: string, now = Date.now()) {
  const vendor = await requireVendor(db, vendorId);
  const revoked = await revokeAll(db, vendorId, now);
  const apiKey = await issueKey(db, vendorId, vendor.mode, now);
  return { vendor_id: vendorId, api_key: apiKey, revoked };
}

/**
 * Makes `apiKey` the vendor's one active key: `kept` when it already was (every client holding it goes on
 * working), `restored` when it had been revoked or rotated away, `new` when it was never issued. Only the
 * development demo uses this: its key is derived from the master key (server/dev/demo.ts), so it stays
 * the same across restarts on the same database.
 */
export async function ensureKey(
  db: Db,
  vendorId: string,
  apiKey: string,
  now = Date.now(),
): Promise<{ vendor_id: string; outcome: 'kept' | 'restored' | 'new' }> {
  const vendor = await requireVendor(db, vendorId);
  if (!API_KEY.test(apiKey) || !apiKey.startsWith(`sk_${vendor.mode}_`)) {
    throw AppError.invalid('api_key', 'format', 'Not an API key of this vendor');
  }
  const hash = hashSecret(apiKey);
  const active = await vendorStore(db).activeKeyHashes(vendorId);
  if (active.length === 1 && safeEqualHex(active[0]!, hash)) return { vendor_id: vendorId, outcome: 'kept' };
  await revokeAll(db, vendorId, now);
  if (await vendorStore(db).reactivateKey(vendorId, hash))
    return { vendor_id: vendorId, outcome: 'restored' };
  await issueKey(db, vendorId, vendor.mode, now, apiKey);
  return { vendor_id: vendorId, outcome: 'new' };
}

export async function revokeKeys(db: Db, vendorId: string, now = Date.now()) {
  await requireVendor(db, vendorId);
  return { vendor_id: vendorId, revoked: await revokeAll(db, vendorId, now) };
}

/**
 * Resolves an X-API-Key. Live keys only work in production and test keys only outside it (docs/vendor-api.md).
 * Every failure is the same 401 so that a caller learns nothing about which keys exist.
 */
export async function authenticateVendor(
  db: Db,
  apiKey: unknown,
  env: Environment,
): Promise<VendorPrincipal> {
  const unauthorized = (reason: string) =>
    new AppError('UNAUTHORIZED', 'Missing or invalid API key', { field: 'X-API-Key', reason });
  if (typeof apiKey !== 'string' || apiKey.length === 0) throw unauthorized('missing');
  const m = API_KEY.exec(apiKey);
  if (!m) throw unauthorized('invalid');
  const mode = m[1] as 'test' | 'live';
  if (mode === 'live' && env !== 'production') throw unauthorized('live_key_outside_production');
  if (mode === 'test' && env === 'production') throw unauthorized('test_key_in_production');
  const hash = hashSecret(apiKey);
  const row = await vendorStore(db).keyByHash(hash);
  if (!row || !safeEqualHex(row.key_hash, hash) || row.status !== 'active' || row.mode !== mode) {
    throw unauthorized('invalid');
  }
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    mode: row.mode,
    scopes: row.scopes.split(',').filter(Boolean),
    keyId: row.key_id,
  };
}

/** Whether an API key (by key id) is still active. */
export async function apiKeyActive(db: Db, keyId: string): Promise<boolean> {
  return (await vendorStore(db).keyStatus(keyId)) === 'active';
}

/** Those of the key ids that are no longer active: the revocation watcher closes their sockets. */
export async function revokedKeysAmong(db: Db, keyIds: string[]): Promise<string[]> {
  if (keyIds.length === 0) return [];
  const active = new Set(await vendorStore(db).activeKeysAmong(keyIds));
  return keyIds.filter((id) => !active.has(id));
}

export async function findVendorByName(db: Db, name: string) {
  return vendorStore(db).findVendorByName(name);
}
