import { randomBytes } from 'node:crypto';
import { groth16 } from 'snarkjs';
import { computeWitness, provingKey } from './artifacts.ts';
import {
  CIRCUIT_ID,
  encodeAttributeValue,
  FIELD_ORDER,
  isAtLeastAge,
  utcDate,
  ZK_FORMAT,
} from './encoding.ts';
import { generateServiceKey, type ServiceKeyPair, signBytes } from './keys.ts';
import { type Predicate, type PredicateProof, type Statement, StatementSchema } from './schema.ts';
import { predicateAttribute, publicSignals, signedPayload } from './signals.ts';

export class ZkPredicateFalseError extends Error {
  constructor(predicate: Predicate) {
    super(`predicate ${predicate.type} does not hold: there is no proof of a false statement`);
    this.name = 'ZkPredicateFalseError';
  }
}

export interface ProveRequest {
  /** The attribute's decrypted value: `YYYY-MM-DD` for date_of_birth, the string otherwise. */
  readonly value: string;
  readonly authId: string;
  readonly predicate: Predicate;
  /** UTC calendar date the statement is made for; default today. */
  readonly date?: string;
  /** Where the value came from (`self_asserted` or a verifier id); signed into the statement. */
  readonly source?: string;
}

/** A proof plus the commitment opening, which the service may keep (encrypted) for later audit. */
export interface ProveResult {
  readonly proof: PredicateProof;
  readonly opening: { readonly attribute: string; readonly value: string; readonly salt: string };
}

export function holds(predicate: Predicate, value: string, date: string): boolean {
  if (predicate.type === 'age_over') return isAtLeastAge(value, date, predicate.minimum_age);
  return predicate.values.includes(value);
}

function freshSalt(): bigint {
  // 31 random bytes, below the field order: hides low-entropy values (birth dates) from brute force
  // and makes two commitments to the same value unlinkable.
  return BigInt(`0x${randomBytes(31).toString('hex')}`) % FIELD_ORDER;
}

/**
 * Proves `predicate` about a value the service holds, for one auth context, without disclosing it:
 * a Groth16 proof that a fresh Poseidon commitment opens to a value satisfying the predicate, and an
 * Ed25519 signature of the service over statement + commitment. Throws ZkPredicateFalseError when the
 * value does not satisfy the predicate (checked first: the circuit would refuse anyway).
 */
export async function provePredicate(key: ServiceKeyPair, req: ProveRequest): Promise<ProveResult> {
  const date = req.date ?? utcDate(new Date());
  const { predicate, value } = req;
  if (!holds(predicate, value, date)) throw new ZkPredicateFalseError(predicate);
  const attribute = predicateAttribute(predicate);
  // Refuse here what a verifier would refuse as malformed (e.g. an auth id with spaces, 9 set values).
  const statement: Statement = StatementSchema.parse({
    auth_id: req.authId,
    date,
    predicate,
    kid: key.publicKey.kid,
    ...(req.source !== undefined ? { source: req.source } : {}),
  });
  const salt = freshSalt();
  const expected = publicSignals(statement, '0');
  const input = {
    binding: expected[1],
    attrTag: expected[2],
    kind: expected[3],
    bound: expected[4],
    set: expected.slice(5),
    value: encodeAttributeValue(attribute, value).toString(),
    salt: salt.toString(),
  };
  const witness = await computeWitness(input);
  const { proof, publicSignals: produced } = await groth16.prove(
    { type: 'mem', data: provingKey() },
    { type: 'mem', data: witness },
  );
  const commitment = produced[0];
  if (commitment === undefined) throw new Error('circuit returned no commitment');
  return {
    proof: {
      format: ZK_FORMAT,
      circuit: CIRCUIT_ID,
      statement,
      commitment,
      public_signals: produced,
      proof: { pi_a: proof.pi_a, pi_b: proof.pi_b, pi_c: proof.pi_c, protocol: 'groth16', curve: 'bn128' },
      signature: signBytes(key, signedPayload(statement, commitment)),
    },
    opening: { attribute, value, salt: salt.toString() },
  };
}

/** Result of an `entrance` context with `minimum_age` (docs/vendor-api.md, docs/zk-proofs.md): never the birth date itself. */
export interface AgeResult {
  /** Attribute name `age_over_<N>`. */
  readonly name: string;
  readonly value: boolean;
  /** Present when asked for (`age_proof`) and the user is old enough: a false statement has no proof. */
  readonly proof?: PredicateProof;
  readonly opening?: ProveResult['opening'];
}

/** One call for the server: decides age ≥ N on the context's date and proves it when asked. */
export async function proveAgeForContext(
  key: ServiceKeyPair,
  args: {
    dateOfBirth: string;
    authId: string;
    minimumAge: number;
    withProof: boolean;
    now?: Date;
    /** `self_asserted` or the verifier's id (docs/zk-proofs.md). */
    source?: string;
  },
): Promise<AgeResult> {
  const date = utcDate(args.now ?? new Date());
  const name = `age_over_${args.minimumAge}`;
  const value = isAtLeastAge(args.dateOfBirth, date, args.minimumAge);
  if (!value || !args.withProof) return { name, value };
  const { proof, opening } = await provePredicate(key, {
    value: args.dateOfBirth,
    authId: args.authId,
    predicate: { type: 'age_over', minimum_age: args.minimumAge },
    date,
    ...(args.source !== undefined ? { source: args.source } : {}),
  });
  return { name, value, proof, opening };
}

/**
 * Starts the BN254 engine and the witness generator (about 2-3 s once per process) so that the first
 * entrance context does not pay for it. Call at server start-up, not awaited on the request path.
 */
export async function warmUpProver(): Promise<void> {
  await provePredicate(generateServiceKey(), {
    value: '2000-01-01',
    authId: 'warm-up',
    predicate: { type: 'age_over', minimum_age: 18 },
    date: '2026-01-01',
  });
}
