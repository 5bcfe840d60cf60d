import { catalogueEntry, isReservedName } from '@palmid/contracts/api/attribute-catalogue';
import type { FailureReason, InSetPredicate } from '@palmid/contracts/api/auth-contexts';
import type { AuditEntry } from '../audit/service.ts';
import { inSetName, predicateConsented } from '../verification/zk.ts';
import { ageAttributeName, ageOnDate } from './age.ts';
import type { AuthContext } from './store.ts';

/**
 * The pure decisions of a resolution (docs/vendor-api.md, "Attributes and consent"; docs/zk-proofs.md):
 * which attributes are read, which are disclosed, the age and set predicates, and the outcome. No I/O:
 * resolve.ts gathers the inputs and writes the outputs.
 */

/** Attribute names the user consented to share with the vendor now. */
export type Consented = {
  has(name: string): boolean;
  /** the grant's details (the set of an `<attr>_in_set` consent) */
  get?(name: string): { values?: string[]; min_set_size?: number } | undefined;
};

/** Attribute names that are never looked up as stored values. */
const SYNTHETIC = new Set(['pseudonym', 'age_proof']);

export interface DisclosureInput {
  context: AuthContext;
  userId: string;
  vendorId: string;
  /** the vendor-scoped pseudonym of the user */
  pseudo: string;
  /** attribute names the user consented to share with the vendor now */
  consents: Consented;
  predicates: readonly InSetPredicate[];
  /** the values read for `attributesToRead` */
  values: ReadonlyMap<string, unknown>;
  /** Where the birth date came from: `self_asserted` or the verifier's id (signed into an age proof). */
  birthDateSource?: string;
  now: number;
}

/** A statement to prove with zero knowledge (only true statements are proved). */
export type ProofStatement =
  | { kind: 'age'; dateOfBirth: string; minimumAge: number; source: string }
  | { kind: 'in_set'; predicate: InSetPredicate; value: string };

export interface Disclosure {
  attributes: Record<string, unknown>;
  /** one READ record per requested attribute, SUCCESS or DENIED */
  audit: AuditEntry[];
  missing: string[];
  /** `age_over_N` when the context asks for a minimum age */
  ageName: string | null;
  outcome: { status: 'completed' | 'failed'; reason?: FailureReason };
  /** only for a completed context: nothing is disclosed otherwise */
  proofs: ProofStatement[];
}

const requestedOf = (c: AuthContext) => [...c.attributesRequired, ...c.attributesOptional];

/**
 * A service-derived name outside the catalogue (`age_over_<N>`, `<name>_in_set`, `is_<name>`, `ledger_id`,
 * `payment`): only the service computes it, so a stored value by that name (written before names were
 * reserved) is never read or disclosed (docs/attributes.md, "Reserved names").
 */
const derivedOnly = (name: string) => isReservedName(name) && catalogueEntry(name) === undefined;

/**
 * The stored attributes to read: requested and consented ones, the birth date when the age predicate is
 * consented, and the attributes of consented set predicates (read to prove, never disclosed).
 */
export function attributesToRead(
  c: AuthContext,
  consents: Consented,
  predicates: readonly InSetPredicate[],
): string[] {
  const lookup = requestedOf(c).filter((n) => !SYNTHETIC.has(n) && !derivedOnly(n) && consents.has(n));
  const ageName = c.minimumAge === null ? null : ageAttributeName(c.minimumAge);
  if (ageName !== null && ageConsented(consents, ageName) && !lookup.includes('date_of_birth'))
    lookup.push('date_of_birth');
  for (const p of predicates)
    if (predicateConsented(consents, p) && !lookup.includes(p.attribute)) lookup.push(p.attribute);
  return lookup;
}

/**
 * The consent that allowed a disclosed name (its retention, and whether it still stands once another was
 * revoked): the name's own, the birth date's for `age_over_<N>`, an age consent for `age_proof`, the
 * attribute's or the set's for `<attr>_in_set`, the set's for `<attr>_proof`. Undefined when none covers it
 * (`pseudonym` is disclosed without one).
 */
export function consentCovering<G>(name: string, consents: ReadonlyMap<string, G>): G | undefined {
  const own = consents.get(name);
  if (own !== undefined) return own;
  if (/^age_over_\d+$/.test(name)) return consents.get('date_of_birth');
  if (name === 'age_proof') {
    for (const [n, g] of consents) if (n === 'date_of_birth' || /^age_over_\d+$/.test(n)) return g;
    return undefined;
  }
  const inSet = /^([a-z][a-z0-9_]*)_in_set$/.exec(name);
  if (inSet) return consents.get(inSet[1]!);
  const proof = /^([a-z][a-z0-9_]*)_proof$/.exec(name);
  if (proof) return consents.get(`${proof[1]}_in_set`) ?? consents.get(proof[1]!);
  return undefined;
}

const ageConsented = (consents: Consented, ageName: string) =>
  consents.has(ageName) || consents.has('date_of_birth');

export function decideDisclosure(input: DisclosureInput): Disclosure {
  const { context: c, consents, values, predicates, now } = input;
  const requested = requestedOf(c);
  const attributes: Record<string, unknown> = {};
  const audit: AuditEntry[] = [];
  const missing: string[] = [];
  const read = (attributeName: string, ok: boolean) =>
    audit.push({
      userId: input.userId,
      vendorId: input.vendorId,
      attributeName,
      operation: 'READ',
      result: ok ? 'SUCCESS' : 'DENIED',
    });
  const minAge = c.minimumAge;
  const ageName = minAge === null ? null : ageAttributeName(minAge);
  for (const name of requested) {
    if (name === ageName) continue; // computed from the birth date below
    if (name === 'pseudonym') {
      attributes.pseudonym = input.pseudo;
      continue;
    }
    if (name === 'age_proof') continue; // produced with the age predicate (zero-knowledge module)
    const has = consents.has(name) && !derivedOnly(name) && values.has(name);
    if (has) attributes[name] = values.get(name);
    else if (c.attributesRequired.includes(name)) missing.push(name);
    read(name, has);
  }

  let ageOk: boolean | null = null;
  const dob = values.get('date_of_birth');
  if (minAge !== null && ageName !== null) {
    // Audited as what the vendor received (age_over_N, yes or no), not the birth date it was computed
    // from: the user's activity page says what was disclosed (docs/user-api.md "Audit").
    const source = input.birthDateSource ?? 'self_asserted';
    // a context that asks for a verified birth date treats a self-asserted one as missing
    const unverified = c.minimumAgeSource === 'verified' && source === 'self_asserted';
    if (!ageConsented(consents, ageName) || typeof dob !== 'string' || unverified) {
      missing.push(ageName);
      read(ageName, false);
    } else {
      ageOk = ageOnDate(dob, new Date(now)) >= minAge;
      attributes[ageName] = ageOk;
      read(ageName, true);
    }
  }
  // Age was derived from the birth date only to compute the predicate; the date itself is disclosed only
  // when it was requested by name and consented.
  if (!requested.includes('date_of_birth')) delete attributes.date_of_birth;

  const proofs: ProofStatement[] = [];
  // Proofs only of true statements: an underage user gets `age_over_N: false` and no proof.
  if (minAge !== null && ageOk === true && requested.includes('age_proof') && typeof dob === 'string')
    proofs.push({
      kind: 'age',
      dateOfBirth: dob,
      minimumAge: minAge,
      source: input.birthDateSource ?? 'self_asserted',
    });
  for (const p of predicates) {
    const value = values.get(p.attribute);
    const ok = predicateConsented(consents, p) && typeof value === 'string';
    if (!ok) missing.push(inSetName(p.attribute));
    else {
      attributes[inSetName(p.attribute)] = p.values.includes(value);
      if (p.values.includes(value) && p.proof !== false) proofs.push({ kind: 'in_set', predicate: p, value });
    }
    delete attributes[p.attribute];
    read(p.attribute, ok);
  }

  let outcome: Disclosure['outcome'];
  if (missing.length > 0) outcome = { status: 'failed', reason: 'consent_missing' };
  else if (ageOk === false) outcome = { status: 'failed', reason: 'underage' };
  else outcome = { status: 'completed' };
  return {
    attributes,
    audit,
    missing,
    ageName,
    outcome,
    proofs: outcome.status === 'completed' ? proofs : [],
  };
}
