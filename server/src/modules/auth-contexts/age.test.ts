import { describe, expect, it } from 'vitest';
import { ageOnDate } from './age.ts';

describe('ageOnDate', () => {
  it('counts completed years', () => {
    expect(ageOnDate('2000-06-15', new Date('2018-06-15T00:00:00Z'))).toBe(18);
    expect(ageOnDate('2000-06-15', new Date('2018-06-14T23:59:59Z'))).toBe(17);
    expect(ageOnDate('2000-06-15', new Date('2030-01-01T00:00:00Z'))).toBe(29);
  });

  it('treats a 29 February birthday as reached on 1 March in common years', () => {
    expect(ageOnDate('2004-02-29', new Date('2022-02-28T12:00:00Z'))).toBe(17);
    expect(ageOnDate('2004-02-29', new Date('2022-03-01T00:00:00Z'))).toBe(18);
    expect(ageOnDate('2004-02-29', new Date('2024-02-29T00:00:00Z'))).toBe(20);
  });

  it('rejects malformed dates', () => {
    expect(ageOnDate('15/06/2000', new Date())).toBeNaN();
  });
});
