import { AppError } from '@palmid/contracts/errors';
import type { Db } from '../../db/index.ts';
import { KioskLockout } from '../lockouts/service.ts';

/**
 * Failed identifications on the direct path (`POST /api/v1/auth`) lock out per capture device and per API
 * key, with the kiosk's rule (modules/lockouts/service.ts): the same database rows, so the lock holds on every
 * instance and across restarts. An API key's row is keyed `api_key:<key id>`, a device's by its pvs_id
 * (a device used both at a kiosk and on the direct path shares one lock).
 */
export class DirectLockout {
  readonly #lockout: KioskLockout;

  constructor(db: Db) {
    this.#lockout = new KioskLockout(db);
  }

  /**
   * Admits one identification for both the device and the key, or throws 429 (`capture_locked`). The
   * returned function settles it: `failed` true for no_match or liveness_failed, false for a match,
   * undefined when nothing was decided.
   */
  async admit(
    deviceId: string,
    keyId: string,
    now: number,
  ): Promise<(failed: boolean | undefined) => Promise<void>> {
    const keys = [deviceId, `api_key:${keyId}`];
    const admitted: string[] = [];
    for (const key of keys) {
      const wait = await this.#lockout.admit(key, now);
      if (wait > 0) {
        for (const k of admitted) await this.#lockout.settle(k, undefined, now);
        throw new AppError('RATE_LIMITED', 'Locked after repeated failed identifications', {
          reason: 'capture_locked',
          locked: key === deviceId ? 'device' : 'api_key',
          retry_after_s: Math.ceil(wait / 1000),
        });
      }
      admitted.push(key);
    }
    return async (failed) => {
      for (const k of admitted) await this.#lockout.settle(k, failed, now);
    };
  }
}
