import { randomUUID } from 'node:crypto';
import { AppError } from '@palmid/contracts/errors';
import { hashSecret, newSecret, safeEqualHex } from '../../crypto/secrets.ts';
import type { Db } from '../../db/index.ts';
import { newProvisioningSecret } from '../devices/service.ts';
import { getVendor } from '../vendors/service.ts';
import { pvsStore } from './store.ts';

export interface PvsPrincipal {
  id: string;
  name: string;
  vendorId: string | null;
}

/** Registers a kiosk (palm-vein scanner system). The device token is shown once and stored hashed. */
export async function createPvs(
  db: Db,
  input: { name: string; vendorId?: string | null | undefined },
  now = Date.now(),
) {
  if (input.vendorId) {
    if (!(await getVendor(db, input.vendorId)))
      throw new AppError('NOT_FOUND', `No vendor ${input.vendorId}`, { field: 'vendor', reason: 'unknown' });
  }
  const id = randomUUID();
  const token = newSecret('pvs_');
  await pvsStore(db).insert({
    id,
    name: input.name,
    vendor_id: input.vendorId ?? null,
    token_hash: hashSecret(token),
    created_at: now,
    last_seen: null,
    revoked_at: null,
  });
  // The device binds its own key with this one-time secret (docs/kiosk-install.md).
  const provisioning_secret = await newProvisioningSecret(db, id, now);
  return {
    pvs_id: id,
    name: input.name,
    vendor_id: input.vendorId ?? null,
    device_token: token,
    provisioning_secret,
  };
}

/** `admin pvs rekey`: drops the device's registered key and issues a new one-time provisioning secret. */
export async function rekeyPvs(db: Db, id: string, now = Date.now()) {
  const row = await pvsStore(db).get(id);
  if (!row || row.revoked_at !== null)
    throw new AppError('NOT_FOUND', `No active kiosk ${id}`, { field: 'pvs_id', reason: 'unknown' });
  return { pvs_id: id, provisioning_secret: await newProvisioningSecret(db, id, now) };
}

/** A capture device's registration (for attestation checks on the direct path). */
export async function findPvs(
  db: Db,
  id: string,
): Promise<{ vendorId: string | null; revoked: boolean; name: string } | undefined> {
  const row = await pvsStore(db).get(id);
  return row ? { vendorId: row.vendor_id, revoked: row.revoked_at !== null, name: row.name } : undefined;
}

export async function listPvs(db: Db) {
  return pvsStore(db).list();
}

export async function revokePvs(db: Db, id: string, now = Date.now()) {
  if (!(await pvsStore(db).markRevoked(id, now)))
    throw new AppError('NOT_FOUND', `No active kiosk ${id}`, { field: 'pvs_id', reason: 'unknown' });
  return { pvs_id: id, revoked: true };
}

export async function authenticatePvs(db: Db, header: unknown): Promise<PvsPrincipal> {
  const unauthorized = () =>
    new AppError('UNAUTHORIZED', 'Missing or invalid device token', {
      field: 'Authorization',
      reason: 'invalid',
    });
  if (typeof header !== 'string') throw unauthorized();
  const m = /^Bearer (pvs_[A-Za-z0-9_-]{43})$/.exec(header);
  if (!m) throw unauthorized();
  const hash = hashSecret(m[1]!);
  const row = await pvsStore(db).byTokenHash(hash);
  if (!row || !safeEqualHex(row.token_hash, hash) || row.revoked_at !== null) throw unauthorized();
  return { id: row.id, name: row.name, vendorId: row.vendor_id };
}

export async function touchPvs(db: Db, id: string, now: number): Promise<void> {
  await pvsStore(db).touch(id, now);
}

/** Whether the kiosk may still act: known and not revoked. */
export async function pvsActive(db: Db, id: string): Promise<boolean> {
  const row = await pvsStore(db).get(id);
  return row !== undefined && row.revoked_at === null;
}

/** Those of `ids` that are revoked (or gone): the revocation watcher closes their sockets. */
export async function revokedPvsAmong(db: Db, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const active = new Set(await pvsStore(db).activeAmong(ids));
  return ids.filter((id) => !active.has(id));
}

/** A kiosk's addressing facts (an auth context may name it), or undefined if there is no such kiosk. */
export async function findKiosk(
  db: Db,
  id: string,
): Promise<{ vendorId: string | null; revokedAt: number | null } | undefined> {
  const row = await pvsStore(db).get(id);
  return (
    row && { vendorId: row.vendor_id, revokedAt: row.revoked_at === null ? null : Number(row.revoked_at) }
  );
}

/** Revokes every active kiosk of that name (the development demo re-creates its kiosk at each start). */
export async function revokePvsNamed(db: Db, name: string, now: number): Promise<void> {
  await pvsStore(db).markRevokedNamed(name, now);
}
