/**
 * Whether this is a CI run, and the skips someone asked for (`PALMID_SKIP_POSTGRES=1`,
 * `PALMID_SKIP_REDIS=1`: what `npm run test:fast` sets). Apart from requirements.ts, which loads vitest, so
 * that the benchmarks, which load test/support outside vitest, can use it.
 */

/** True under CI (`CI=true` or `CI=1`). */
export const IN_CI = /^(1|true)$/i.test(process.env.CI ?? '');

/** The reason for a skip asked for with `name=1`, or null when the variable is not set. */
export function optOut(name: string): string | null {
  return process.env[name] === '1' ? `${name}=1` : null;
}

/** True when `missing` is a skip someone asked for (made by `optOut`), not a missing program. */
export function isOptOut(missing: string): boolean {
  return /^PALMID_SKIP_[A-Z_]+=1$/.test(missing);
}
