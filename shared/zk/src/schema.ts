import { z } from 'zod';
import { CIRCUIT_ID, SET_SIZE, ZK_FORMAT } from './encoding.ts';

const decimal = z.string().regex(/^(0|[1-9]\d{0,77})$/, 'decimal field element');
const isoDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'YYYY-MM-DD');
const attributeName = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/);
const base64url = z.string().regex(/^[A-Za-z0-9_-]+$/);
const kid = z.string().regex(/^[0-9a-f]{16}$/);

/** The service's published proof key (`GET /api/v1/keys/zk`): an Ed25519 public JWK with a kid. */
export const ServicePublicKeySchema = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: base64url.length(43),
  kid,
  alg: z.literal('EdDSA').optional(),
  use: z.literal('sig').optional(),
});
export type ServicePublicKey = z.infer<typeof ServicePublicKeySchema>;

export const AgeOverPredicateSchema = z.strictObject({
  type: z.literal('age_over'),
  minimum_age: z.number().int().min(0).max(150),
});
export const InSetPredicateSchema = z.strictObject({
  type: z.literal('in_set'),
  attribute: attributeName.refine((a) => a !== 'date_of_birth', 'date_of_birth supports age_over only'),
  values: z.array(z.string().min(1).max(256)).min(1).max(SET_SIZE),
});
export const PredicateSchema = z.discriminatedUnion('type', [AgeOverPredicateSchema, InSetPredicateSchema]);
export type Predicate = z.infer<typeof PredicateSchema>;

/** What a proof claims, in the clear. */
export const StatementSchema = z.strictObject({
  auth_id: z.string().regex(/^[\x21-\x7e]{1,128}$/, 'printable ASCII, 1-128 chars'),
  /** UTC calendar date the predicate is evaluated on. */
  date: isoDate,
  predicate: PredicateSchema,
  /** kid of the service key that signed the proof. */
  kid,
  /**
   * Age proofs: where the birth date came from, `self_asserted` or the id of the verifier (an identity
   * provider's issuer) that vouches for it (docs/zk-proofs.md, "Statement"). Signed with the rest.
   */
  source: z
    .string()
    .regex(/^[\x21-\x7e]{1,256}$/, 'printable ASCII, 1-256 chars')
    .optional(),
});
export type Statement = z.infer<typeof StatementSchema>;

export const Groth16ProofSchema = z.strictObject({
  pi_a: z.array(decimal).length(3),
  pi_b: z.array(z.array(decimal).length(2)).length(3),
  pi_c: z.array(decimal).length(3),
  protocol: z.literal('groth16'),
  curve: z.literal('bn128'),
});

/** The document a vendor receives as `age_proof` and checks offline. */
export const PredicateProofSchema = z.strictObject({
  format: z.literal(ZK_FORMAT),
  circuit: z.literal(CIRCUIT_ID),
  statement: StatementSchema,
  /** Poseidon commitment to the hidden value (fresh salt per proof). */
  commitment: decimal,
  /** Informative copy of the Groth16 public signals; the verifier recomputes them from the statement. */
  public_signals: z.array(decimal),
  proof: Groth16ProofSchema,
  /** Ed25519 signature (base64url) by the service key over the statement and commitment. */
  signature: base64url.length(86),
});
export type PredicateProof = z.infer<typeof PredicateProofSchema>;
