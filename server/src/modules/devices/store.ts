import type { Db } from '../../db/index.ts';
import type { CaptureKeysTable } from '../../db/schema.ts';

/**
 * The devices module's tables: `capture_keys` (one row per capture device: its registered public key,
 * one-time provisioning secret hash and highest accepted counter) and `capture_nonces` (single-use server
 * nonces). Other modules go through ./service.ts.
 */
export type CaptureKeyRow = CaptureKeysTable;

/** The devices' store: every query on `capture_keys` and `capture_nonces`. */
export interface DeviceStore {
  loadKey(pvsId: string): Promise<CaptureKeyRow | undefined>;
  /** A new provisioning secret (hash) for a device: any bound key is dropped, the counter starts over. */
  resetKey(pvsId: string, provisioningHash: string, now: number): Promise<void>;
  /** Binds a public key if the provisioning secret is still unused (compare-and-set: one binder wins). */
  bindKey(pvsId: string, provisioningHash: string, publicKey: string, now: number): Promise<boolean>;
  /**
   * Moves the device's counter to `highest` if `lowest` (the request's first counter) is above the last
   * accepted one (compare-and-set, so it holds across instances).
   */
  advanceCounter(pvsId: string, lowest: number, highest: number, now: number): Promise<boolean>;
  /** Stores a new nonce; the device's expired ones go. */
  insertNonce(
    row: { nonce: string; pvs_id: string; purpose: string; subject: string; expires_at: number },
    now: number,
  ): Promise<void>;
  /** Nonces issued to a device that are neither used nor expired. */
  countOpenNonces(pvsId: string, now: number): Promise<number>;
  /**
   * Marks a nonce used if it was issued to this device for this purpose and subject and is still valid;
   * returns its expiry, or undefined.
   */
  consumeNonce(
    q: { nonce: string; pvsId: string; purpose: string; subject: string },
    now: number,
  ): Promise<number | undefined>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyDeviceStore implements DeviceStore {
  constructor(private readonly db: Db) {}

  async loadKey(pvsId: string): Promise<CaptureKeyRow | undefined> {
    const row = await this.db
      .selectFrom('capture_keys')
      .selectAll()
      .where('pvs_id', '=', pvsId)
      .executeTakeFirst();
    return row ? { ...row, last_counter: Number(row.last_counter) } : undefined;
  }

  /** A new provisioning secret (hash) for a device: any bound key is dropped, the counter starts over. */
  async resetKey(pvsId: string, provisioningHash: string, now: number): Promise<void> {
    const values = {
      public_key: null,
      provisioning_hash: provisioningHash,
      last_counter: 0,
      bound_at: null,
      updated_at: now,
    };
    await this.db
      .insertInto('capture_keys')
      .values({ pvs_id: pvsId, ...values })
      .onConflict((oc) => oc.column('pvs_id').doUpdateSet(values))
      .execute();
  }

  /** Binds a public key if the provisioning secret is still unused (compare-and-set: one binder wins). */
  async bindKey(pvsId: string, provisioningHash: string, publicKey: string, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('capture_keys')
      .set({ public_key: publicKey, provisioning_hash: null, bound_at: now, updated_at: now })
      .where('pvs_id', '=', pvsId)
      .where('provisioning_hash', '=', provisioningHash)
      .where('public_key', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /**
   * Moves the device's counter to `highest` if `lowest` (the request's first counter) is above the last
   * accepted one (compare-and-set, so it holds across instances).
   */
  async advanceCounter(pvsId: string, lowest: number, highest: number, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('capture_keys')
      .set({ last_counter: highest, updated_at: now })
      .where('pvs_id', '=', pvsId)
      .where('last_counter', '<', lowest)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async insertNonce(
    row: { nonce: string; pvs_id: string; purpose: string; subject: string; expires_at: number },
    now: number,
  ): Promise<void> {
    // Nonces are short-lived: the device's expired ones go when it gets a new one.
    await this.db
      .deleteFrom('capture_nonces')
      .where('pvs_id', '=', row.pvs_id)
      .where('expires_at', '<', now)
      .execute();
    await this.db
      .insertInto('capture_nonces')
      .values({ ...row, used_at: null })
      .execute();
  }

  /** Nonces issued to a device that are neither used nor expired. */
  async countOpenNonces(pvsId: string, now: number): Promise<number> {
    const row = await this.db
      .selectFrom('capture_nonces')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('pvs_id', '=', pvsId)
      .where('used_at', 'is', null)
      .where('expires_at', '>=', now)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /**
   * Marks a nonce used if it was issued to this device for this purpose and subject and is still valid;
   * returns its expiry (the issue time follows from the purpose's lifetime), or undefined.
   */
  async consumeNonce(
    q: { nonce: string; pvsId: string; purpose: string; subject: string },
    now: number,
  ): Promise<number | undefined> {
    const row = await this.db
      .updateTable('capture_nonces')
      .set({ used_at: now })
      .where('nonce', '=', q.nonce)
      .where('pvs_id', '=', q.pvsId)
      .where('purpose', '=', q.purpose)
      .where('subject', '=', q.subject)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('expires_at')
      .executeTakeFirst();
    return row ? Number(row.expires_at) : undefined;
  }
}

export const deviceStore = (db: Db): DeviceStore => new KyselyDeviceStore(db);
