import { describe, expect, it } from 'vitest';
import { randomRequestId } from './request-id.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('randomRequestId', () => {
  it('gives version-4 UUIDs, distinct across several pool refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const id = randomRequestId();
      expect(id).toMatch(UUID_V4);
      seen.add(id);
    }
    expect(seen.size).toBe(2000);
  });

  it('uses every hex digit in every free position (random, not a counter)', () => {
    const digits = Array.from({ length: 36 }, () => new Set<string>());
    for (let i = 0; i < 2000; i++) {
      const id = randomRequestId();
      for (let j = 0; j < 36; j++) digits[j]?.add(id[j] as string);
    }
    for (let j = 0; j < 36; j++) {
      if ([8, 13, 18, 23].includes(j)) expect([...(digits[j] ?? [])]).toEqual(['-']);
      else if (j === 14) expect([...(digits[j] ?? [])]).toEqual(['4']);
      else if (j === 19) expect(digits[j]?.size).toBe(4);
      else expect(digits[j]?.size).toBe(16);
    }
  });

  it('returns an independent string each time', () => {
    const a = randomRequestId();
    const copy = `${a}`;
    randomRequestId();
    expect(a).toBe(copy);
  });
});
