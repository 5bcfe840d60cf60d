import { CURRENCY_MINOR_UNITS, formatAmount, isCurrency } from '@palmid/contracts/money';

const dateTime = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short' });
const dateOnly = new Intl.DateTimeFormat('en-GB', { dateStyle: 'long' });

export function when(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : dateTime.format(d);
}

export function day(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : dateOnly.format(d);
}

/** "email", "date_of_birth" → "e-mail address"-style words for sentences. */
export function words(name: string): string {
  const special: Record<string, string> = {
    email: 'email',
    phone: 'phone number',
    date_of_birth: 'date of birth',
    postal_code: 'postal code',
    '*': 'whole account',
  };
  return special[name] ?? name.replace(/_/g, ' ');
}

/**
 * Digits after the decimal point of `currency` (EUR 2, JPY 0, KWD 3) per ISO 4217, as the API counts them
 * (shared/contracts/src/money.ts); undefined for a code the API does not take.
 */
export function minorDigits(currency: string): number | undefined {
  return isCurrency(currency) ? CURRENCY_MINOR_UNITS[currency] : undefined;
}

/** An amount in the currency's smallest unit (the API's unit), formatted: 1250 EUR → €12.50, 1250 JPY → ¥1,250. */
export function money(amount: number | null, currency: string | null): string {
  if (amount === null) return '—';
  const cur = currency ?? 'EUR';
  const digits = minorDigits(cur);
  if (digits === undefined) return `${amount} ${cur} (smallest unit)`;
  try {
    return new Intl.NumberFormat('en-GB', {
      style: 'currency',
      currency: cur,
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    }).format(amount / 10 ** digits);
  } catch {
    return formatAmount(amount, cur, 'en-GB');
  }
}

export function valueText(value: unknown): string {
  if (value === null || value === undefined) return 'not set';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (Array.isArray(value)) return value.length ? value.join(', ') : 'none';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function short(id: string): string {
  return id.length > 12 ? `${id.slice(0, 8)}…` : id;
}
