import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AuthHistoryItem } from '../../context.ts';
import type { LedgerTransaction } from '../ledger/service.ts';
import { ageInYears, loyaltyPoints, loyaltyTier, riskScore } from './computed.ts';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 23, 12);

function tx(at: number, amount: number | null, code = 'ok'): LedgerTransaction {
  return {
    'user-id': 'a'.repeat(64),
    'context-id': crypto.randomUUID(),
    attributes: amount === null ? [] : [{ type: 'payment', context: amount }],
    vendor: { id: 'v', url: '' },
    timestamp: at,
    result: { code },
  };
}

describe('computed attributes', () => {
  it('age counts completed years; the birthday itself counts', () => {
    expect(ageInYears('2008-11-23', NOW)).toBe(18);
    expect(ageInYears('2008-11-24', NOW)).toBe(17);
    expect(ageInYears('1961-11-23', NOW)).toBe(65);
    expect(ageInYears('1961-11-24', NOW)).toBe(64);
    // 29 February: of age on 1 March in a common year.
    expect(ageInYears('2008-02-29', Date.UTC(2026, 1, 28))).toBe(17);
    expect(ageInYears('2008-02-29', Date.UTC(2026, 2, 1))).toBe(18);
  });

  it('age never decreases with time and matches the year difference within one', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('1900-01-01'), max: new Date('2026-01-01'), noInvalidDate: true }),
        fc.integer({ min: 0, max: 400 * DAY }),
        (dob, later) => {
          const s = dob.toISOString().slice(0, 10);
          const a = ageInYears(s, NOW);
          const b = ageInYears(s, NOW + later);
          const diff = new Date(NOW).getUTCFullYear() - dob.getUTCFullYear();
          return b >= a && a >= 0 && (a === diff || a === diff - 1);
        },
      ),
    );
  });

  it('loyalty tier: points from successful transactions of the last 365 days', () => {
    expect(loyaltyTier([], NOW)).toBe('none');
    expect(loyaltyTier([tx(NOW - DAY, 100)], NOW)).toBe('bronze');
    expect(loyaltyTier([tx(NOW - DAY, 100, 'no_match')], NOW)).toBe('none');
    expect(loyaltyTier([tx(NOW - 400 * DAY, 10_000_000)], NOW)).toBe('none');
    expect(loyaltyPoints([tx(NOW - DAY, 90_000)], NOW)).toBe(10);
    expect(loyaltyTier([tx(NOW - DAY, 90_000)], NOW)).toBe('silver');
    expect(loyaltyTier([tx(NOW - DAY, 2_000_000)], NOW)).toBe('platinum');
    const fifty = Array.from({ length: 50 }, (_, i) => tx(NOW - i * DAY, null));
    expect(loyaltyTier(fifty, NOW)).toBe('gold');
  });

  it('loyalty tier never drops when a successful transaction is added', () => {
    const order = ['none', 'bronze', 'silver', 'gold', 'platinum'];
    const txs = fc.array(
      fc.tuple(fc.integer({ min: 0, max: 500 }), fc.integer({ min: 0, max: 1_000_000 }), fc.boolean()),
      { maxLength: 80 },
    );
    fc.assert(
      fc.property(
        txs,
        fc.integer({ min: 0, max: 364 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        (list, d, amt) => {
          const base = list.map(([days, a, ok]) => tx(NOW - days * DAY, a, ok ? 'ok' : 'failed'));
          const before = order.indexOf(loyaltyTier(base, NOW));
          const after = order.indexOf(loyaltyTier([...base, tx(NOW - d * DAY, amt)], NOW));
          return after >= before;
        },
      ),
    );
  });

  it('risk score: 0.4 without history, bounded in [0, 1], up with failures', () => {
    expect(riskScore([], NOW)).toBe(0.4);
    const ok = (at: number): AuthHistoryItem => ({ status: 'completed', at });
    const bad = (at: number): AuthHistoryItem => ({ status: 'failed', at });
    expect(
      riskScore(
        Array.from({ length: 98 }, (_, i) => ok(NOW - ((i + 2) * DAY) / 2)),
        NOW,
      ),
    ).toBe(0.01);
    expect(
      riskScore(
        Array.from({ length: 5 }, () => bad(NOW - 1000)),
        NOW,
      ),
    ).toBe(0.89);
    expect(riskScore([bad(NOW - 100 * DAY)], NOW)).toBe(0.4); // outside the 90-day window
    const history = fc.array(
      fc.record({
        status: fc.constantFrom('completed' as const, 'failed' as const),
        at: fc.integer({ min: NOW - 120 * DAY, max: NOW }),
      }),
      { maxLength: 60 },
    );
    fc.assert(
      fc.property(history, fc.integer({ min: 0, max: 89 * DAY }), (h, ago) => {
        const s = riskScore(h, NOW);
        const withFailure = riskScore([...h, bad(NOW - ago)], NOW);
        const withSuccess = riskScore([...h, ok(NOW - ago)], NOW);
        return s >= 0 && s <= 1 && withFailure >= s && withSuccess <= s;
      }),
    );
  });
});
