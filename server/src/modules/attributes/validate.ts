import { catalogueEntry } from '@palmid/contracts/api/attribute-catalogue';
import { AppError } from '@palmid/contracts/errors';

/**
 * Value validation (docs/attributes.md, "Validation": validated, then encrypted, then stored). Every check is a pure
 * function so that property tests can drive it; `validateAttributeValue` turns a failure into a 400 naming
 * `value` and a machine-readable reason. docs/attributes.md lists the rules.
 */

export const MAX_VALUE_BYTES = 4096;
export const MAX_TEXT_CHARS = 256;
export const MAX_ENCRYPTED_CHARS = 16_384;
const EARLIEST_DATE = '1900-01-01';
/** The furthest time zone is UTC+14: a date is "in the future" only when it is in the future everywhere. */
const MAX_ZONE_AHEAD_MS = 14 * 3_600_000;

const EMAIL_LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const EMAIL_LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const EMAIL_TLD = /^[A-Za-z]{2,63}$|^xn--[A-Za-z0-9-]{1,59}$/;

export function isEmail(value: string): boolean {
  if (value.length > 254) return false;
  const at = value.lastIndexOf('@');
  if (at <= 0 || at > 64) return false;
  const local = value.slice(0, at);
  const labels = value.slice(at + 1).split('.');
  if (!EMAIL_LOCAL.test(local) || labels.length < 2) return false;
  return labels.every((l) => EMAIL_LABEL.test(l)) && EMAIL_TLD.test(labels[labels.length - 1]!);
}

/** ITU-T E.164: a plus, a non-zero country-code digit, at most 15 digits in all. */
export const E164 = /^\+[1-9]\d{1,14}$/;
export function isE164(value: string): boolean {
  return E164.test(value);
}

/**
 * A phone number as people write it, made E.164: spaces (also no-break spaces), hyphens, dots, slashes
 * and parentheses are dropped and a leading international `00` becomes `+`, so "+49 151 1234-5678" and
 * "0049 (151) 12345678" are stored as "+4915112345678". A number without a country code stays invalid.
 */
export function normalisePhone(value: string): string {
  const compact = value.trim().replace(/[\s\u00a0\u202f()./-]/g, '');
  return compact.startsWith('00') ? `+${compact.slice(2)}` : compact;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A real calendar date written `YYYY-MM-DD` (no time, no zone). */
export function isCalendarDate(value: string): boolean {
  const m = DATE.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1) return false;
  const t = new Date(Date.UTC(y, mo - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d;
}

/** The latest date that is not in the future anywhere on Earth at `now`. */
export function latestPastDate(now: number): string {
  return new Date(now + MAX_ZONE_AHEAD_MS).toISOString().slice(0, 10);
}

/** Postal code patterns of common countries, on the upper-cased value; others use GENERIC_POSTAL. */
export const POSTAL_PATTERNS: Readonly<Record<string, RegExp>> = {
  US: /^\d{5}(-\d{4})?$/,
  CA: /^[ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z] ?\d[ABCEGHJ-NPRSTV-Z]\d$/,
  GB: /^([A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}|GIR ?0AA)$/,
  IE: /^[AC-FHKNPRTV-Y]\d[\dW] ?[0-9AC-FHKNPRTV-Y]{4}$/,
  DE: /^\d{5}$/,
  FR: /^\d{5}$/,
  IT: /^\d{5}$/,
  ES: /^(0[1-9]|[1-4]\d|5[0-2])\d{3}$/,
  FI: /^\d{5}$/,
  NL: /^[1-9]\d{3} ?[A-Z]{2}$/,
  BE: /^[1-9]\d{3}$/,
  AT: /^[1-9]\d{3}$/,
  CH: /^[1-9]\d{3}$/,
  DK: /^\d{4}$/,
  NO: /^\d{4}$/,
  AU: /^\d{4}$/,
  SE: /^[1-9]\d{2} ?\d{2}$/,
  PL: /^\d{2}-\d{3}$/,
  PT: /^\d{4}-\d{3}$/,
  JP: /^\d{3}-?\d{4}$/,
  BR: /^\d{5}-?\d{3}$/,
  IN: /^[1-9]\d{5}$/,
};

/** Anywhere else: 2–10 letters, digits, spaces or hyphens, starting and ending with a letter or digit. */
export const GENERIC_POSTAL = /^[A-Z0-9][A-Z0-9 -]{0,8}[A-Z0-9]$/;

export function normalisePostalCode(value: string): string {
  return value.toUpperCase();
}

export function isPostalCode(value: string, country?: string): boolean {
  const v = normalisePostalCode(value);
  const pattern = (country && POSTAL_PATTERNS[country.toUpperCase()]) || GENERIC_POSTAL;
  return pattern.test(v);
}

export const COUNTRY = /^[A-Z]{2}$/;

// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to reject control characters
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export function jsonSize(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

function invalid(reason: string, message: string): AppError {
  return new AppError('INVALID_REQUEST', message, { field: 'value', reason });
}

function requireString(value: unknown, what: string): string {
  if (typeof value !== 'string') throw invalid('not_a_string', `value must be a string (${what})`);
  return value;
}

export interface ValidationContext {
  now: number;
  /** The user's stored `country` attribute, when known: selects the postal code pattern. */
  country?: string | undefined;
}

/** A client-encrypted value is opaque to the service: a non-empty string of bounded size. */
export function validateEncryptedValue(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0)
    throw invalid('not_a_string', 'an encrypted value must be a non-empty string');
  if (value.length > MAX_ENCRYPTED_CHARS)
    throw invalid('too_large', `an encrypted value holds at most ${MAX_ENCRYPTED_CHARS} characters`);
  return value;
}

/** Checks a plain value for `name` and returns the value to store (postal codes and countries upper-cased). */
export function validateAttributeValue(name: string, value: unknown, vc: ValidationContext): unknown {
  if (value === undefined) throw invalid('required', 'value is required');
  if (value === null) throw invalid('null_value', 'value must not be null (DELETE the attribute instead)');
  if (jsonSize(value) > MAX_VALUE_BYTES)
    throw invalid('too_large', `value must be at most ${MAX_VALUE_BYTES} bytes of JSON`);
  const type = catalogueEntry(name)?.type ?? 'any';
  switch (type) {
    case 'email': {
      const s = requireString(value, 'an e-mail address');
      if (!isEmail(s)) throw invalid('invalid_email', 'value must be an e-mail address');
      return s;
    }
    case 'phone': {
      const s = normalisePhone(requireString(value, 'an E.164 phone number'));
      if (!isE164(s))
        throw invalid('invalid_phone', 'value must be an E.164 phone number, e.g. +4915112345678');
      return s;
    }
    case 'date': {
      const s = requireString(value, 'a YYYY-MM-DD date');
      if (!isCalendarDate(s)) throw invalid('invalid_date', 'value must be a date written YYYY-MM-DD');
      if (s > latestPastDate(vc.now)) throw invalid('date_in_future', 'the date must not be in the future');
      if (s < EARLIEST_DATE) throw invalid('date_too_early', `the date must not be before ${EARLIEST_DATE}`);
      return s;
    }
    case 'postal_code': {
      const s = requireString(value, 'a postal code');
      if (!isPostalCode(s, vc.country)) {
        const where = vc.country && POSTAL_PATTERNS[vc.country] ? ` for country ${vc.country}` : '';
        throw invalid('invalid_postal_code', `value is not a valid postal code${where}`);
      }
      return normalisePostalCode(s);
    }
    case 'country': {
      const s = requireString(value, 'an ISO 3166-1 alpha-2 code').toUpperCase();
      if (!COUNTRY.test(s)) throw invalid('invalid_country', 'value must be an ISO 3166-1 alpha-2 code');
      return s;
    }
    case 'text': {
      const s = requireString(value, 'text');
      if (s.trim().length === 0) throw invalid('empty', 'value must not be empty');
      if (s.length > MAX_TEXT_CHARS)
        throw invalid('too_long', `value holds at most ${MAX_TEXT_CHARS} characters`);
      if (CONTROL.test(s)) throw invalid('control_characters', 'value must not contain control characters');
      return s;
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw invalid('not_a_boolean', 'value must be true or false');
      return value;
    default:
      return value;
  }
}
