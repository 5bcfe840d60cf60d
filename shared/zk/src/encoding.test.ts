import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addDays, ageCutoff, dateToInt, isAtLeastAge } from './encoding.ts';

/** Reference: the N-th birthday, with 29 Feb moving to 1 Mar in common years, is on or before today. */
function referenceAtLeast(dob: Date, today: Date, n: number): boolean {
  const y = dob.getUTCFullYear() + n;
  let m = dob.getUTCMonth();
  let d = dob.getUTCDate();
  const leap = (yy: number) => (yy % 4 === 0 && yy % 100 !== 0) || yy % 400 === 0;
  if (m === 1 && d === 29 && !leap(y)) [m, d] = [2, 1];
  return Date.UTC(y, m, d) <= today.getTime();
}

const iso = (t: Date) => t.toISOString().slice(0, 10);

describe('calendar encoding', () => {
  it('rejects strings that are not calendar dates', () => {
    expect(() => dateToInt('2023-02-29')).toThrow(RangeError);
    expect(() => dateToInt('2024-13-01')).toThrow(RangeError);
    expect(() => dateToInt('24-01-01')).toThrow(RangeError);
    expect(dateToInt('2024-02-29')).toBe(20240229);
  });

  it('a user aged N minus one day is not N; on the birthday they are', () => {
    expect(isAtLeastAge('2005-11-24', '2026-11-23', 21)).toBe(false);
    expect(isAtLeastAge('2005-11-23', '2026-11-23', 21)).toBe(true);
    expect(isAtLeastAge('2006-01-02', '2027-01-01', 21)).toBe(false);
    expect(isAtLeastAge('2006-01-01', '2027-01-01', 21)).toBe(true);
  });

  it('someone born on 29 Feb turns N on 1 Mar of a common year, on 29 Feb of a leap year', () => {
    expect(isAtLeastAge('2004-02-29', '2025-02-28', 21)).toBe(false);
    expect(isAtLeastAge('2004-02-29', '2025-03-01', 21)).toBe(true);
    expect(isAtLeastAge('2004-02-29', '2024-02-28', 20)).toBe(false);
    expect(isAtLeastAge('2004-02-29', '2024-02-29', 20)).toBe(true);
    // On 29 Feb of a leap year the cutoff in a common year admits 28 Feb and not 1 Mar.
    expect(ageCutoff('2024-02-29', 21)).toBe(20030229);
    expect(isAtLeastAge('2003-02-28', '2024-02-29', 21)).toBe(true);
    expect(isAtLeastAge('2003-03-01', '2024-02-29', 21)).toBe(false);
  });

  it('agrees with a birthday-based reference on arbitrary dates', () => {
    const day = fc.date({
      min: new Date('1900-01-01T00:00:00Z'),
      max: new Date('2100-12-31T00:00:00Z'),
      noInvalidDate: true,
    });
    fc.assert(
      fc.property(day, day, fc.integer({ min: 0, max: 120 }), (a, b, n) => {
        const dob = new Date(`${iso(a)}T00:00:00Z`);
        const today = new Date(`${iso(b)}T00:00:00Z`);
        fc.pre(today.getUTCFullYear() - n >= 1);
        expect(isAtLeastAge(iso(dob), iso(today), n)).toBe(referenceAtLeast(dob, today, n));
      }),
      { numRuns: 2000 },
    );
  });

  it('adds calendar days across month and year ends', () => {
    expect(addDays('2024-02-28', 1)).toBe('2024-02-29');
    expect(addDays('2023-12-31', 1)).toBe('2024-01-01');
    expect(addDays('2024-03-01', -1)).toBe('2024-02-29');
  });
});
