import { AppError } from '@palmid/shared/errors.ts';
import type { AppContext } from '../../context.ts';

/**
 * Per-IP budget for failed credential checks (`RATE_LIMITS.credentials`). Every way in checks it:
 * REST (API key, user token), `/ws/vendor` (header or `auth` frame) and `/ws/pvs` (kiosk key). An
 * exhausted IP is refused before the lookup, whatever it presents, so the answer does not reveal
 * whether a guessed key was valid.
 */
export class CredentialGuard {
  constructor(private readonly ctx: AppContext) {}

  /** Seconds the IP must wait, 0 when it may try. */
  async blockedFor(ip: string): Promise<number> {
    return this.ctx.rateLimits.blockedFor('credentials', ip);
  }

  /** Throws 429 when the IP is over budget. */
  async admit(ip: string): Promise<void> {
    const wait = await this.blockedFor(ip);
    if (wait > 0) throw blockedError(wait);
  }

  async failed(ip: string): Promise<void> {
    await this.ctx.rateLimits.consume('credentials', ip);
  }

  /**
   * Runs a credential check: refused when the IP is over budget; a failure (an `UNAUTHORIZED` error or
   * `undefined`) counts against it.
   */
  async check<T>(ip: string, attempt: () => Promise<T | undefined>): Promise<T | undefined> {
    await this.admit(ip);
    let result: T | undefined;
    try {
      result = await attempt();
    } catch (err) {
      if (err instanceof AppError && err.code === 'UNAUTHORIZED') await this.failed(ip);
      throw err;
    }
    if (result === undefined) await this.failed(ip);
    return result;
  }
}

export function blockedError(retryAfterS: number): AppError {
  return new AppError('RATE_LIMITED', 'Too many failed authentication attempts from this address', {
    reason: 'too_many_failures',
    retry_after_s: retryAfterS,
  });
}
