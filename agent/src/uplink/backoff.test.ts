import { describe, expect, it } from 'vitest';
import { Backoff } from './backoff.ts';

describe('Backoff', () => {
  it('grows exponentially up to the cap, with full jitter', () => {
    const max = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0.999999 });
    expect([1, 2, 3, 4, 5, 6].map(() => max.next())).toEqual([99, 199, 399, 799, 999, 999]);
    const min = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0 });
    expect(min.next()).toBe(0);
  });

  it('honours a longer retry-after and resets after success', () => {
    const b = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0.5 });
    expect(b.next(5000)).toBe(5000);
    b.next();
    b.reset();
    expect(b.attempt).toBe(0);
    expect(b.next()).toBe(50);
  });
});
