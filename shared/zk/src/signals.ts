import { ageCutoff, attributeTag, authBinding, SET_SIZE, valueDigest, ZK_FORMAT } from './encoding.ts';
import type { Predicate, Statement } from './schema.ts';

/** The attribute a predicate is about. */
export function predicateAttribute(predicate: Predicate): string {
  return predicate.type === 'age_over' ? 'date_of_birth' : predicate.attribute;
}

/**
 * The circuit's public inputs for a statement, in the circuit's order (output first):
 * commitment, binding, attrTag, kind, bound, set[SET_SIZE].
 * The verifier derives them from the signed statement, so nothing in it can change without the
 * pairing check failing.
 */
export function publicSignals(statement: Statement, commitment: string): string[] {
  const { predicate } = statement;
  let kind: bigint;
  let bound: bigint;
  let set: bigint[];
  if (predicate.type === 'age_over') {
    kind = 0n;
    bound = BigInt(ageCutoff(statement.date, predicate.minimum_age));
    set = Array.from({ length: SET_SIZE }, () => 0n);
  } else {
    if (predicate.values.length < 1 || predicate.values.length > SET_SIZE) {
      throw new RangeError(`in_set takes 1 to ${SET_SIZE} values`);
    }
    kind = 1n;
    bound = 0n;
    const digests = predicate.values.map(valueDigest);
    // Unused slots repeat the first value: duplicates change nothing, zeros would add a spare root.
    set = Array.from({ length: SET_SIZE }, (_, i) => digests[i] ?? (digests[0] as bigint));
  }
  return [
    BigInt(commitment),
    authBinding(statement.auth_id),
    attributeTag(predicateAttribute(predicate)),
    kind,
    bound,
    ...set,
  ].map((v) => v.toString());
}

function predicateText(p: Predicate): string {
  return p.type === 'age_over'
    ? `age_over ${p.minimum_age}`
    : `in_set ${p.attribute} ${JSON.stringify(p.values)}`;
}

/** The bytes the service signs: every statement field and the commitment, in a fixed layout. */
export function signedPayload(statement: Statement, commitment: string): Uint8Array {
  const lines = [
    ZK_FORMAT,
    statement.kid,
    statement.auth_id,
    statement.date,
    predicateText(statement.predicate),
    // present only in proofs that name their source, so older proofs keep their signed bytes
    ...(statement.source !== undefined ? [`source ${statement.source}`] : []),
    commitment,
  ];
  return Buffer.from(lines.join('\n'), 'utf8');
}
