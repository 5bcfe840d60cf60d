import { CATALOGUE } from '@palmid/contracts/api/attribute-catalogue';
import { ATTRIBUTE_NAME } from '@palmid/contracts/api/attributes';
import { AppError } from '@palmid/contracts/errors';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  GENERIC_POSTAL,
  isCalendarDate,
  isE164,
  isEmail,
  isPostalCode,
  latestPastDate,
  MAX_VALUE_BYTES,
  POSTAL_PATTERNS,
  validateAttributeValue,
  validateEncryptedValue,
} from './validate.ts';

const NOW = Date.UTC(2026, 10, 23, 12);
const pad = (n: number, w: number) => String(n).padStart(w, '0');
const ymd = (d: Date) =>
  `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`;

function reason(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    expect(err.code).toBe('INVALID_REQUEST');
    expect(err.details.field).toBe('value');
    return err.details.reason;
  }
}

describe('attribute validators (properties)', () => {
  it('validation never crashes: any JSON value for any name is accepted or a 400 on value', () => {
    const names = [...Object.keys(CATALOGUE), 'favourite_colour'];
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.jsonValue(), (name, value) => {
        reason(() => validateAttributeValue(name, value, { now: NOW }));
        reason(() => validateAttributeValue(name, value, { now: NOW, country: 'DE' }));
      }),
      { numRuns: 2000 },
    );
  });

  it('E.164: + and 2–15 digits not starting with 0; nothing else', () => {
    const valid = fc
      .tuple(
        fc.integer({ min: 1, max: 9 }),
        fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 14 }),
      )
      .map(([first, rest]) => `+${first}${rest.join('')}`);
    fc.assert(
      fc.property(
        valid,
        (p) => isE164(p) && reason(() => validateAttributeValue('phone', p, { now: NOW })) === undefined,
      ),
    );
    fc.assert(
      fc.property(valid, (p) => !isE164(p.slice(1)) && !isE164(`${p} `) && !isE164(`${p}0`.padEnd(17, '1'))),
    );
    fc.assert(fc.property(fc.string(), (s) => !isE164(s) || /^\+[1-9]\d{1,14}$/.test(s)));
  });

  it('phone numbers written with spaces, dashes, dots, parentheses or a leading 00 are stored as E.164', () => {
    const store = (v: string) => validateAttributeValue('phone', v, { now: NOW });
    expect(store('+49 151 1234 5678')).toBe('+4915112345678');
    expect(store(' +49 (151) 1234-5678 ')).toBe('+4915112345678');
    expect(store('0049 151.1234\u00a05678')).toBe('+4915112345678');
    expect(store('+1 (415) 555-0100')).toBe('+14155550100');
    // still no number without a country code, and nothing but digits after the plus
    expect(reason(() => store('0151 1234 5678'))).toBe('invalid_phone');
    expect(reason(() => store('+49 151 ABC'))).toBe('invalid_phone');
    expect(reason(() => store('+49 151 1234 5678 9012 34'))).toBe('invalid_phone');
  });

  it('dates: every real past date in YYYY-MM-DD is accepted; future ones are refused', () => {
    const past = fc.date({
      min: new Date(Date.UTC(1900, 0, 1)),
      max: new Date(NOW - 86_400_000),
      noInvalidDate: true,
    });
    fc.assert(
      fc.property(past, (d) => {
        const s = ymd(d);
        return (
          isCalendarDate(s) &&
          reason(() => validateAttributeValue('date_of_birth', s, { now: NOW })) === undefined
        );
      }),
    );
    const future = fc.date({
      min: new Date(NOW + 2 * 86_400_000),
      max: new Date(Date.UTC(9999, 0, 1)),
      noInvalidDate: true,
    });
    fc.assert(
      fc.property(
        future,
        (d) =>
          reason(() => validateAttributeValue('date_of_birth', ymd(d), { now: NOW })) === 'date_in_future',
      ),
    );
    expect(latestPastDate(NOW)).toBe('2026-11-24'); // already tomorrow in UTC+14 at 12:00 UTC
  });

  it('dates: impossible days and other spellings are refused', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1900, max: 2020 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 29, max: 40 }),
        (y, m, d) => {
          const s = `${y}-${pad(m, 2)}-${pad(d, 2)}`;
          const real = new Date(Date.UTC(y, m - 1, d)).getUTCDate() === d && d <= 31;
          return isCalendarDate(s) === real;
        },
      ),
    );
    for (const s of [
      '1990-1-01',
      '1990-13-01',
      '1990-00-10',
      '19900101',
      '1990-02-29',
      ' 1990-01-01',
      '1990-01-01T00:00Z',
    ])
      expect(isCalendarDate(s), s).toBe(false);
    expect(isCalendarDate('2000-02-29')).toBe(true);
  });

  it('e-mail: well-formed addresses pass, and no address with whitespace or without @ does', () => {
    const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
    const email = fc
      .tuple(
        fc.stringMatching(/^[A-Za-z0-9._%+-]{1,20}$/),
        fc.array(label, { minLength: 1, maxLength: 3 }),
        fc.stringMatching(/^[a-z]{2,6}$/),
      )
      .filter(([local]) => !local.startsWith('.') && !local.endsWith('.') && !local.includes('..'))
      .map(([local, labels, tld]) => `${local}@${[...labels, tld].join('.')}`);
    fc.assert(fc.property(email, (e) => isEmail(e)));
    fc.assert(fc.property(fc.string(), (s) => !isEmail(s) || (s.includes('@') && !/\s/.test(s))));
    for (const bad of [
      'a@b',
      '@x.org',
      'a@@x.org',
      'a b@x.org',
      'a@x..org',
      '.a@x.org',
      'a@-x.org',
      `${'a'.repeat(65)}@x.org`,
    ])
      expect(isEmail(bad), bad).toBe(false);
  });

  it('postal codes: known country patterns, generic fallback, case-insensitive', () => {
    const zip = fc.stringMatching(/^\d{5}(-\d{4})?$/);
    fc.assert(fc.property(zip, (z) => isPostalCode(z, 'US') && isPostalCode(z)));
    fc.assert(
      fc.property(fc.stringMatching(/^\d{5}$/), (z) => isPostalCode(z, 'DE') && isPostalCode(z, 'FR')),
    );
    fc.assert(fc.property(fc.stringMatching(/^[1-9]\d{3} ?[a-z]{2}$/), (z) => isPostalCode(z, 'NL')));
    fc.assert(
      fc.property(
        fc.string(),
        fc.constantFrom(...Object.keys(POSTAL_PATTERNS), 'ZZ'),
        (s, c) => !isPostalCode(s, c) || (s.length >= 2 && s.length <= 10 && s.trim() === s),
      ),
    );
    expect(isPostalCode('K1A 0B1', 'CA')).toBe(true);
    expect(isPostalCode('ec1a 1bb', 'GB')).toBe(true);
    expect(isPostalCode('1234', 'DE')).toBe(false);
    expect(isPostalCode('1234AB', 'US')).toBe(false);
    expect(GENERIC_POSTAL.test('1234AB')).toBe(true);
  });

  it('the examples of docs/attributes.md are valid for their country', () => {
    const examples: [string, string][] = [
      ['US', '94105-1234'],
      ['CA', 'K1A 0B1'],
      ['GB', 'SW1A 1AA'],
      ['IE', 'D02 X285'],
      ['DE', '10115'],
      ['ES', '28013'],
      ['NL', '1012 AB'],
      ['AT', '1010'],
      ['DK', '2000'],
      ['SE', '114 55'],
      ['PL', '00-950'],
      ['PT', '1100-148'],
      ['JP', '100-0001'],
      ['BR', '01310-100'],
      ['IN', '110001'],
    ];
    for (const [country, code] of examples)
      expect(isPostalCode(code, country), `${country} ${code}`).toBe(true);
  });

  it('unknown names take any JSON up to the size limit', () => {
    fc.assert(
      fc.property(
        fc.jsonValue().filter((v) => v !== null),
        (v) => {
          const size = Buffer.byteLength(JSON.stringify(v));
          const r = reason(() => validateAttributeValue('custom_field', v, { now: NOW }));
          return size > MAX_VALUE_BYTES ? r === 'too_large' : r === undefined;
        },
      ),
    );
  });

  it('client-encrypted values: any non-empty string up to 16 KiB', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 200 }), (s) => validateEncryptedValue(s) === s),
    );
    for (const bad of ['', 1, null, {}, 'x'.repeat(16_385)])
      expect(() => validateEncryptedValue(bad)).toThrow(AppError);
  });

  it('the name pattern matches docs/attributes.md (Names)', () => {
    fc.assert(fc.property(fc.stringMatching(/^[a-z][a-z0-9_]{0,63}$/), (n) => ATTRIBUTE_NAME.test(n)));
    fc.assert(
      fc.property(fc.string(), (s) => !ATTRIBUTE_NAME.test(s) || (s.length <= 64 && /^[a-z]/.test(s))),
    );
    expect(ATTRIBUTE_NAME.test('a'.repeat(65))).toBe(false);
  });
});
