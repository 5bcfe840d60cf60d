import { describe, expect, it } from 'vitest';
import { toRecord } from './state.ts';
import type { AuthContext } from './store.ts';

const context = (createdAt: number, expiresAt: number): AuthContext => ({
  id: '3f0c9a52-7d1e-4c3b-9a5e-2b7f1c8d4e60',
  vendorId: 'v',
  type: 'payment',
  amount: 1250,
  currency: 'EUR',
  minimumAge: null,
  minimumAgeSource: 'any',
  attributesRequired: [],
  attributesOptional: [],
  pvsId: null,
  status: 'pending',
  resultEnc: null,
  userId: null,
  createdAt,
  expiresAt,
  updatedAt: createdAt,
  valuesUntil: null,
});

describe('toRecord', () => {
  it('formats created_at and expires_at as toISOString does, for repeated and changing times', () => {
    // Repeats (one group's creates share a millisecond), changes, and back to an earlier time.
    const times = [0, 0, 1_700_000_000_123, 1_700_000_000_123, 1_700_000_000_124, 0, 253_402_300_799_999];
    for (const t of times) {
      for (const ttl of [1000, 3_600_000]) {
        const r = toRecord(context(t, t + ttl));
        expect(r.created_at).toBe(new Date(t).toISOString());
        expect(r.expires_at).toBe(new Date(t + ttl).toISOString());
      }
    }
  });
});
