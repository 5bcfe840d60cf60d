import { describe, expect, it } from 'vitest';
import { CURRENCY_CODES, formatAmount, isCurrency, maxAmount } from './money.ts';

describe('money', () => {
  it('knows ISO 4217 codes in use, and nothing else', () => {
    for (const c of ['EUR', 'USD', 'JPY', 'KWD', 'CHF', 'XOF', 'CLF']) expect(isCurrency(c), c).toBe(true);
    for (const c of ['XYZ', 'eur', 'EURO', 'XAU', 'XTS', 'HRK', '', 'toString', 'constructor'])
      expect(isCurrency(c), c).toBe(false);
    expect(CURRENCY_CODES.length).toBeGreaterThan(150);
  });

  it('bounds amounts per currency, far below the integer limit', () => {
    expect(maxAmount('EUR')).toBe(99_999_999_999);
    expect(maxAmount('JPY')).toBe(999_999_999);
    expect(maxAmount('KWD')).toBe(999_999_999_999);
    for (const c of CURRENCY_CODES) expect(maxAmount(c)).toBeLessThan(Number.MAX_SAFE_INTEGER);
  });

  it('formats smallest units in major units', () => {
    expect(formatAmount(1250, 'EUR')).toBe('12.50 EUR');
    expect(formatAmount(1250, 'JPY')).toBe('1,250 JPY');
    expect(formatAmount(1, 'KWD')).toBe('0.001 KWD');
    expect(formatAmount(maxAmount('EUR'), 'EUR')).toBe('999,999,999.99 EUR');
  });
});
