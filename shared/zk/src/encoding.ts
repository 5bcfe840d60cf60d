import { createHash } from 'node:crypto';

/**
 * Field encodings shared by the prover, the verifier and the circuit (circuits/palmid_predicate.circom).
 * Changing anything here changes the public signals: bump ZK_FORMAT and regenerate the artifacts.
 */

/** Order of the BN254 scalar field: every circuit signal is an integer below it. */
export const FIELD_ORDER = 21888242871839275222246405745257275088548364400416417274496933583372353808385n;
/** Number of slots of the membership set (circuit template parameter). */
export const SET_SIZE = 8;
export const ZK_FORMAT = 'palmid-zk-proof/1';
export const CIRCUIT_ID = 'palmid_predicate';
const DOMAIN = 'palmid/zk/v1/';

/** 248-bit prefix of a domain-separated SHA-256 digest: always below FIELD_ORDER, collision resistant. */
function digest248(label: string, text: string): bigint {
  const hex = createHash('sha256').update(`${DOMAIN}${label}\u0000${text}`, 'utf8').digest('hex');
  return BigInt(`0x${hex.slice(0, 62)}`);
}

/** Public signal that ties a proof to one authentication context. */
export const authBinding = (authId: string): bigint => digest248('auth_id', authId);
/** Public signal naming the attribute a signed commitment is about (a DOB commitment is no membership). */
export const attributeTag = (attribute: string): bigint => digest248('attribute', attribute);
/** Field encoding of a string attribute value (membership_status, vaccination_status, ...). */
export const valueDigest = (value: string): bigint => digest248('value', value);

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A calendar date `YYYY-MM-DD` as the integer YYYYMMDD; throws on anything that is not a real date. */
export function dateToInt(date: string): number {
  const m = ISO_DATE.exec(date);
  if (!m) throw new RangeError(`not a YYYY-MM-DD date: ${date}`);
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const t = new Date(Date.UTC(y, mo - 1, d));
  if (y < 1 || t.getUTCFullYear() !== y || t.getUTCMonth() !== mo - 1 || t.getUTCDate() !== d) {
    throw new RangeError(`not a calendar date: ${date}`);
  }
  return y * 10_000 + mo * 100 + d;
}

/** The UTC calendar date of an instant, `YYYY-MM-DD`. */
export function utcDate(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/** `date` shifted by a whole number of days (UTC calendar). */
export function addDays(date: string, days: number): string {
  dateToInt(date);
  const t = new Date(`${date}T00:00:00Z`);
  t.setUTCDate(t.getUTCDate() + days);
  return utcDate(t);
}

/**
 * Latest birth date (as YYYYMMDD) of someone who is at least `years` old on `today`: the same month and
 * day, `years` earlier. Computed in calendar terms, outside the circuit. As an integer comparison it
 * also settles leap days: on 29 Feb of a leap year the cutoff Y-02-29 of a common year Y admits
 * everyone born up to Y-02-28, and someone born on 29 Feb turns N on 1 Mar in common years (their
 * birth date 0229 exceeds a 28 Feb cutoff and is below a 1 Mar one).
 */
export function ageCutoff(today: string, years: number): number {
  if (!Number.isInteger(years) || years < 0 || years > 200) throw new RangeError(`bad age: ${years}`);
  const t = dateToInt(today);
  if (Math.floor(t / 10_000) - years < 1) throw new RangeError(`age ${years} reaches before year 1`);
  return t - years * 10_000;
}

/** Whether someone born on `dateOfBirth` is at least `years` old on `today` (same rule as the circuit). */
export function isAtLeastAge(dateOfBirth: string, today: string, years: number): boolean {
  return dateToInt(dateOfBirth) <= ageCutoff(today, years);
}

/** Field encoding of an attribute value as committed and proven: dates as YYYYMMDD, other strings hashed. */
export function encodeAttributeValue(attribute: string, value: string): bigint {
  return attribute === 'date_of_birth' ? BigInt(dateToInt(value)) : valueDigest(value);
}
