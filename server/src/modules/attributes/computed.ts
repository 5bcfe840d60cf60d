import { LOYALTY_TIER_VALUES } from '@palmid/contracts/api/domains';
import type { AuthHistoryItem } from '../../context.ts';
import type { LedgerTransaction } from '../ledger/service.ts';

/**
 * Computed attributes are derived on every read and never stored, so they follow their inputs at once
 * (a corrected birth date, a new transaction). The formulas are documented in docs/attributes.md.
 */

const DAY_MS = 86_400_000;
export const LOYALTY_WINDOW_MS = 365 * DAY_MS;
export const RISK_WINDOW_MS = 90 * DAY_MS;
const RISK_BURST_MS = DAY_MS;

/** Completed years between a `YYYY-MM-DD` birth date and the UTC date of `now`. */
export function ageInYears(dateOfBirth: string, now: number): number {
  const [y, m, d] = dateOfBirth.split('-').map(Number) as [number, number, number];
  const today = new Date(now);
  const ty = today.getUTCFullYear();
  const tm = today.getUTCMonth() + 1;
  const td = today.getUTCDate();
  // A 29 February birthday is reached on 1 March in common years (the day after 28 February).
  const hadBirthday = tm > m || (tm === m && td >= d);
  return ty - y - (hadBirthday ? 0 : 1);
}

export const LOYALTY_TIERS = LOYALTY_TIER_VALUES;
export type LoyaltyTier = (typeof LOYALTY_TIERS)[number];

/** Minimum points for each tier, highest first. */
const TIER_THRESHOLDS: readonly [LoyaltyTier, number][] = [
  ['platinum', 200],
  ['gold', 50],
  ['silver', 10],
  ['bronze', 1],
];

/** One point per successful transaction plus one per 100.00 paid (10 000 minor units), over 365 days. */
export function loyaltyPoints(transactions: readonly LedgerTransaction[], now: number): number {
  let count = 0;
  let paid = 0;
  for (const tx of transactions) {
    if (tx.result?.code !== 'ok' || tx.timestamp > now || tx.timestamp < now - LOYALTY_WINDOW_MS) continue;
    count += 1;
    for (const a of tx.attributes ?? []) {
      const amount = Number(a.context);
      if (a.type === 'payment' && Number.isSafeInteger(amount) && amount > 0) paid += amount;
    }
  }
  return count + Math.floor(paid / 10_000);
}

export function loyaltyTier(transactions: readonly LedgerTransaction[], now: number): LoyaltyTier {
  const points = loyaltyPoints(transactions, now);
  for (const [tier, min] of TIER_THRESHOLDS) if (points >= min) return tier;
  return 'none';
}

/**
 * Risk in [0, 1] from the last 90 days of resolved authentications: 0.8 × the smoothed failure ratio
 * (f + 1) / (n + 2) plus 0.2 × min(failures in the last 24 h, 5) / 5, rounded to two decimals.
 * A user without history scores 0.4 (unknown, not trusted, not suspect).
 */
export function riskScore(history: readonly AuthHistoryItem[], now: number): number {
  let n = 0;
  let failed = 0;
  let recentFailed = 0;
  for (const h of history) {
    if (h.at > now || h.at < now - RISK_WINDOW_MS) continue;
    n += 1;
    if (h.status === 'failed') {
      failed += 1;
      if (h.at >= now - RISK_BURST_MS) recentFailed += 1;
    }
  }
  const score = 0.8 * ((failed + 1) / (n + 2)) + 0.2 * (Math.min(recentFailed, 5) / 5);
  return Math.round(Math.min(1, Math.max(0, score)) * 100) / 100;
}
