import type { InSetPredicate } from '@palmid/shared/api/auth-contexts.ts';
import type { PredicateProof } from '@palmid/shared/zk/schema.ts';
import type { Kysely, Transaction } from 'kysely';
import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { dataKeyOf } from '../users/service.ts';
import { saveOpening } from './store.ts';

/**
 * The server side of the zero-knowledge proofs (docs/zk-proofs.md, "Integration"): the service key, the
 * predicates of a context, and proving inside `resolveWithPalm`. The prover itself is
 * `@palmid/shared/zk`; this module decides when to prove and keeps the commitment openings.
 */

// Loaded on first use: snarkjs and the BN254 engine are not needed by processes that never prove.
const prover = () => import('@palmid/shared/zk/prove.ts');

/** Result attribute names of an in_set predicate. */
export const inSetName = (attribute: string) => `${attribute}_in_set`;
export const inSetProofName = (attribute: string) => `${attribute}_proof`;

interface PredicateTables {
  auth_context_predicates: { auth_id: string; predicates: string };
}
type PDb = Kysely<PredicateTables> | Transaction<PredicateTables>;
const tables = (db: Db): PDb => db as unknown as PDb;

export async function savePredicates(db: Db, authId: string, predicates: readonly InSetPredicate[]) {
  if (predicates.length === 0) return;
  await tables(db)
    .insertInto('auth_context_predicates')
    .values({ auth_id: authId, predicates: JSON.stringify(predicates) })
    .execute();
}

export async function loadPredicates(db: Db, authId: string): Promise<InSetPredicate[]> {
  const row = await tables(db)
    .selectFrom('auth_context_predicates')
    .select('predicates')
    .where('auth_id', '=', authId)
    .executeTakeFirst();
  return row ? (JSON.parse(row.predicates) as InSetPredicate[]) : [];
}

/** Consent for a predicate: to the predicate's answer (`<attribute>_in_set`) or to the value itself. */
export const predicateConsented = (consents: ReadonlySet<string> | Map<string, unknown>, p: InSetPredicate) =>
  consents.has(inSetName(p.attribute)) || consents.has(p.attribute);

export interface ProofWork {
  ctx: AppContext;
  db: Db;
  authId: string;
  userId: string;
  now: number;
}

/** Optional timing hook (tests and the bench read how long proving took inside the server flow). */
export const proofTimings: { last_ms: number[] } = { last_ms: [] };

async function keep(
  w: ProofWork,
  proof: PredicateProof,
  opening: { attribute: string; value: string; salt: string },
) {
  const dataKey = await dataKeyOf(w.ctx, w.db, w.userId);
  await saveOpening(w.db, {
    authId: w.authId,
    userId: w.userId,
    dataKey,
    commitment: proof.commitment,
    opening,
    now: w.now,
  });
}

/**
 * `age_over_N` proof for an entrance context, or undefined when the predicate does not hold on the
 * context's UTC date (a false statement has no proof). The opening is stored sealed for the user.
 */
export async function proveAge(
  w: ProofWork,
  dateOfBirth: string,
  minimumAge: number,
): Promise<PredicateProof | undefined> {
  const started = performance.now();
  const { proveAgeForContext } = await prover();
  const res = await proveAgeForContext(w.ctx.keyring.zkServiceKey(), {
    dateOfBirth,
    authId: w.authId,
    minimumAge,
    withProof: true,
    now: new Date(w.now),
  });
  proofTimings.last_ms.push(performance.now() - started);
  if (!res.value || !res.proof || !res.opening) return undefined;
  await keep(w, res.proof, res.opening);
  return res.proof;
}

/** in_set proof; only called when the value is in the set. */
export async function proveInSet(
  w: ProofWork,
  predicate: InSetPredicate,
  value: string,
): Promise<PredicateProof> {
  const started = performance.now();
  const { provePredicate } = await prover();
  const { proof, opening } = await provePredicate(w.ctx.keyring.zkServiceKey(), {
    value,
    authId: w.authId,
    predicate: { type: 'in_set', attribute: predicate.attribute, values: [...predicate.values] },
    date: new Date(w.now).toISOString().slice(0, 10),
  });
  proofTimings.last_ms.push(performance.now() - started);
  await keep(w, proof, opening);
  return proof;
}

/**
 * Starts the prover in the background (2-5 s once per process) so the first entrance context does not pay
 * for it. Never rejects; failures are reported to `onError`.
 */
export function warmUpProverInBackground(onError: (err: unknown) => void): Promise<void> {
  return prover()
    .then((m) => m.warmUpProver())
    .catch(onError);
}
