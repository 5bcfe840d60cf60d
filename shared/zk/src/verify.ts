import { groth16 } from 'snarkjs';
import { VERIFICATION_KEY } from './artifacts.ts';
import { addDays, dateToInt, utcDate } from './encoding.ts';
import { verifyBytes } from './keys.ts';
import {
  type PredicateProof,
  PredicateProofSchema,
  type ServicePublicKey,
  type Statement,
} from './schema.ts';
import { publicSignals, signedPayload } from './signals.ts';

export type VerifyFailure =
  | 'malformed' // not a palmid proof document
  | 'untrusted_service_key' // made under another key than the one the vendor trusts
  | 'bad_signature' // the service signature does not cover this statement and commitment
  | 'auth_id_mismatch' // a proof for another authentication context (replay)
  | 'predicate_mismatch' // proves less than the vendor asked for (lower age, larger set, other attribute)
  | 'date_out_of_range' // statement date too far from the vendor's clock
  | 'invalid_proof'; // the pairing check fails: tampered proof or statement

export type VerifyResult =
  | { readonly valid: true; readonly statement: Statement }
  | { readonly valid: false; readonly reason: VerifyFailure; readonly detail: string };

export interface VerifyExpectations {
  /** The service key the vendor trusts (fetched once from `GET /api/v1/keys/zk`, then pinned). */
  readonly serviceKey: ServicePublicKey;
  /** The auth context the vendor created (replay protection); omit only to inspect a proof. */
  readonly authId?: string;
  /** Accept only `age_over` statements with at least this age. */
  readonly minimumAge?: number;
  /** Accept only `in_set` statements about this attribute whose set lies within `values`. */
  readonly inSet?: { readonly attribute: string; readonly values: readonly string[] };
  /** Vendor's clock, default now. */
  readonly now?: Date;
  /** How many calendar days the statement date may differ from the vendor's UTC date (default 1). */
  readonly maxSkewDays?: number;
}

const fail = (reason: VerifyFailure, detail: string): VerifyResult => ({ valid: false, reason, detail });

/** The vendor's expectations against the statement; null when acceptable. */
function checkStatement(statement: Statement, expect: VerifyExpectations): VerifyResult | null {
  if (statement.kid !== expect.serviceKey.kid) {
    return fail(
      'untrusted_service_key',
      `proof made under key ${statement.kid}, trusted ${expect.serviceKey.kid}`,
    );
  }
  if (expect.authId !== undefined && statement.auth_id !== expect.authId) {
    return fail('auth_id_mismatch', `proof is for auth_id ${statement.auth_id}`);
  }
  const p = statement.predicate;
  if (expect.minimumAge !== undefined) {
    if (p.type !== 'age_over') return fail('predicate_mismatch', `expected age_over, got ${p.type}`);
    if (p.minimum_age < expect.minimumAge) {
      return fail('predicate_mismatch', `proves age >= ${p.minimum_age}, need ${expect.minimumAge}`);
    }
  }
  if (expect.inSet !== undefined) {
    if (p.type !== 'in_set' || p.attribute !== expect.inSet.attribute) {
      return fail('predicate_mismatch', `expected ${expect.inSet.attribute} in a set`);
    }
    const outside = p.values.filter((v) => !expect.inSet?.values.includes(v));
    if (outside.length > 0) return fail('predicate_mismatch', `set also admits ${outside.join(', ')}`);
  }
  const today = utcDate(expect.now ?? new Date());
  const skew = expect.maxSkewDays ?? 1;
  const d = dateToInt(statement.date);
  if (d < dateToInt(addDays(today, -skew)) || d > dateToInt(addDays(today, skew))) {
    return fail('date_out_of_range', `statement dated ${statement.date}, today is ${today}`);
  }
  return null;
}

/**
 * Offline verification of a palmid predicate proof: parses the document, checks the statement against
 * the vendor's expectations, checks the service signature over statement + commitment, recomputes the
 * public signals from the statement (the copy in the document is ignored) and runs the Groth16 pairing
 * check with the verification key shipped in this package. No network access.
 */
export async function verifyPredicateProof(doc: unknown, expect: VerifyExpectations): Promise<VerifyResult> {
  const parsed = PredicateProofSchema.safeParse(doc);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail('malformed', issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid document');
  }
  const proofDoc: PredicateProof = parsed.data;
  let signals: string[];
  try {
    const rejected = checkStatement(proofDoc.statement, expect);
    if (rejected) return rejected;
    signals = publicSignals(proofDoc.statement, proofDoc.commitment);
  } catch (err) {
    return fail('malformed', err instanceof Error ? err.message : String(err));
  }
  if (
    !verifyBytes(
      expect.serviceKey,
      signedPayload(proofDoc.statement, proofDoc.commitment),
      proofDoc.signature,
    )
  ) {
    return fail('bad_signature', 'service signature does not match statement and commitment');
  }
  let ok: boolean;
  try {
    ok = await groth16.verify(VERIFICATION_KEY, signals, proofDoc.proof);
  } catch (err) {
    return fail('invalid_proof', err instanceof Error ? err.message : 'proof points are not valid');
  }
  return ok ? { valid: true, statement: proofDoc.statement } : fail('invalid_proof', 'pairing check failed');
}
