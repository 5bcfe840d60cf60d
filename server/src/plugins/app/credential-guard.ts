import { AppError } from '@palmid/contracts/errors';
import type { AppContext } from '../../context.ts';

/**
 * Budget for failed credential checks (`RATE_LIMITS.credentials`), counted per (client IP, credential
 * prefix) on every way in: REST (API key, user token), `/ws/vendor` (header or `auth` frame) and `/ws/pvs`
 * (kiosk key). The budget refuses only credentials that fail: every credential is looked up, a valid one
 * is always served, and a failing one is answered 429 instead of 401 once its (IP, prefix) is over budget.
 * A flood of bad keys from a shared address (a NAT, a proxy, a misconfigured neighbour) therefore never
 * locks out a valid key or token from that address (docs/security.md, "Failed-credential budgets").
 */
export class CredentialGuard {
  constructor(private readonly ctx: AppContext) {}

  /**
   * Counts one failure of `credential` from `ip`; returns the seconds to wait when the budget is spent
   * (the failure is then answered 429), else 0.
   */
  async failed(ip: string, credential: unknown): Promise<number> {
    const d = await this.ctx.rateLimits.consume('credentials', budgetKey(ip, credential));
    return d.allowed ? 0 : d.retryAfterS;
  }

  /**
   * Runs a credential check. Success is returned whatever the budget says; a failure (an `UNAUTHORIZED`
   * error or `undefined`) counts against (IP, prefix) and becomes a 429 once that budget is spent.
   */
  async check<T>(ip: string, credential: unknown, attempt: () => Promise<T | undefined>): Promise<T> {
    let result: T | undefined;
    try {
      result = await attempt();
    } catch (err) {
      if (err instanceof AppError && err.code === 'UNAUTHORIZED') {
        const wait = await this.failed(ip, credential);
        if (wait > 0) throw blockedError(wait);
      }
      throw err;
    }
    if (result === undefined) {
      const wait = await this.failed(ip, credential);
      if (wait > 0) throw blockedError(wait);
      throw new AppError('UNAUTHORIZED');
    }
    return result;
  }
}

/**
 * The public prefix of a credential: its kind (`sk_test_`, `sk_live_`, `ut_`, `pvs_`), else `other`.
 * Longer prefixes would put every random guess in a bucket of its own and the budget would never apply.
 */
export function credentialPrefix(credential: unknown): string {
  if (typeof credential !== 'string') return 'none';
  const bare = credential.startsWith('Bearer ') ? credential.slice(7) : credential;
  return /^(sk_test_|sk_live_|ut_|pvs_)/.exec(bare)?.[1] ?? 'other';
}

function budgetKey(ip: string, credential: unknown): string {
  return `${ip}|${credentialPrefix(credential)}`;
}

export function blockedError(retryAfterS: number): AppError {
  return new AppError('RATE_LIMITED', 'Too many failed authentication attempts from this address', {
    reason: 'too_many_failures',
    retry_after_s: retryAfterS,
  });
}
