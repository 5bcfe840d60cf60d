import { ApiError } from '../lib/http.ts';

/**
 * The API's reasons (docs/attributes.md, "Validation") said the way a person would say them: the API's
 * own messages name fields and standards ("value must be an E.164 phone number"), which is right for a
 * developer and wrong for the person correcting their phone number.
 */
const REASONS: Record<string, string> = {
  invalid_phone: 'Enter the number with its country code, for example +49 151 1234 5678.',
  invalid_email: 'Enter an email address like name@example.org.',
  invalid_date: 'Enter a full date: day, month and year.',
  date_in_future: 'The date cannot be in the future.',
  date_too_early: 'That date is too far in the past. Check the year.',
  invalid_postal_code: 'That postal code does not look right. Check it and try again.',
  invalid_country: 'Use the two-letter country code, for example DE, FR or GB.',
  too_long: 'That is too long. Shorten it and try again.',
  too_large: 'That is too long. Shorten it and try again.',
  control_characters: 'Remove the special characters (line breaks, tabs) and try again.',
  empty: 'Type something, or clear the field and save to remove it.',
  not_a_string: 'That value cannot be saved here. Check what you typed.',
  not_a_boolean: 'Choose Yes or No.',
};

/** Error codes (SPEC §7) said plainly, for when no reason says more. */
const CODES: Record<string, string> = {
  RATE_LIMITED: 'Too many tries in a short time. Wait a minute, then try again.',
  INTERNAL_ERROR: 'Something went wrong on our side. Try again in a moment.',
  FORBIDDEN: 'You are not allowed to do that.',
  NOT_FOUND: 'That no longer exists. Refresh the page.',
  UNAUTHORIZED: 'Your session ended. Sign in again.',
  CONFLICT: 'That changed in the meantime. Refresh the page and try again.',
};

/**
 * A failure as a sentence for the person using the portal: the reason in plain words when the portal
 * knows it, otherwise the error code's plain meaning, otherwise `fallback`. Network failures keep their
 * own (already plain) message. The API's raw message is never shown.
 */
export function plainError(err: unknown, fallback: string): string {
  if (!(err instanceof ApiError)) return fallback;
  if (err.code === 'NETWORK') return err.message;
  if (err.reason && REASONS[err.reason]) {
    if (err.reason === 'invalid_postal_code') {
      const m = / for country ([A-Z]{2})$/.exec(err.message);
      return m ? `That postal code does not look right for ${m[1]}.` : REASONS[err.reason]!;
    }
    return REASONS[err.reason]!;
  }
  return CODES[err.code] ?? fallback;
}
