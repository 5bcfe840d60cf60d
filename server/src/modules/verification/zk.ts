import { createHash } from 'node:crypto';
import type { InSetPredicate } from '@palmid/contracts/api/auth-contexts';
import { IN_SET_MIN_SIZE } from '@palmid/contracts/api/consents';
import { validSetMembers } from '@palmid/contracts/api/domains';
import type { PredicateProof } from '@palmid/zk/schema';
import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { dataKeyOf } from '../users/service.ts';
import { saveOpening } from './service.ts';
import { verificationStore } from './store.ts';

/**
 * The server side of the zero-knowledge proofs (docs/zk-proofs.md, "Integration"): the service key, the
 * predicates of a context, and the proofs `resolveWithPalm` attaches. The prover itself is
 * `@palmid/zk`; this module decides when to prove and keeps the commitment openings.
 */

// Loaded on first use: snarkjs and the BN254 engine are not needed by processes that never prove.
const prover = () => import('@palmid/zk/prove');

/** Result attribute names of an in_set predicate. */
export const inSetName = (attribute: string) => `${attribute}_in_set`;
export const inSetProofName = (attribute: string) => `${attribute}_proof`;

export async function savePredicates(db: Db, authId: string, predicates: readonly InSetPredicate[]) {
  if (predicates.length === 0) return;
  await verificationStore(db).insertPredicates(authId, JSON.stringify(predicates));
}

export async function loadPredicates(db: Db, authId: string): Promise<InSetPredicate[]> {
  const json = await verificationStore(db).predicatesOf(authId);
  return json !== undefined ? (JSON.parse(json) as InSetPredicate[]) : [];
}

/** Consent for a predicate: to the predicate's answer (`<attribute>_in_set`) or to the value itself. */
/** What a predicate consent says (consents service `ConsentGrant`). */
export interface PredicateGrant {
  values?: string[];
  min_set_size?: number;
}

/**
 * A set predicate is consented when the attribute itself is (its value could be disclosed anyway), or
 * `<attr>_in_set` is and the asked set is the one consented to, or, when the consent names no set, has at
 * least `min_set_size` (default 3) values: a one-element set would disclose the value (docs/zk-proofs.md).
 */
export const predicateConsented = (
  consents: { has(name: string): boolean; get?(name: string): PredicateGrant | undefined },
  p: InSetPredicate,
): boolean => {
  if (consents.has(p.attribute)) return true;
  if (!consents.has(inSetName(p.attribute))) return false;
  const grant = consents.get?.(inSetName(p.attribute));
  const asked = new Set(p.values);
  if (grant?.values !== undefined) {
    const allowed = new Set(grant.values);
    return asked.size === allowed.size && [...asked].every((v) => allowed.has(v));
  }
  // only members of the attribute's closed domain count: junk cannot pad a set to the minimum size, and an
  // attribute without a closed domain is admitted only by a consent naming the exact set
  return validSetMembers(p.attribute, p.values).length >= (grant?.min_set_size ?? IN_SET_MIN_SIZE);
};

export interface ProofWork {
  ctx: AppContext;
  db: Db;
  authId: string;
  userId: string;
  now: number;
}

/** Optional timing hook (tests and the bench read how long proving took inside the server flow). */
export const proofTimings: { last_ms: number[] } = { last_ms: [] };

/** A proof with the commitment opening the user keeps. */
export interface Proven {
  proof: PredicateProof;
  opening: { attribute: string; value: string; salt: string };
}

/**
 * One statement to prove for a context. The key names the statement exactly (context, predicate,
 * UTC date, a digest of the value), so a proof made before the writing transaction can be reused
 * inside it: proving takes 0.2-0.5 s of CPU, and on SQLite a transaction that long stalls every
 * other query.
 */
export interface ProofJob {
  /** result attribute that carries the proof */
  name: string;
  key: string;
  /** undefined when the statement does not hold (a false statement has no proof) */
  run: () => Promise<Proven | undefined>;
}

const utcDay = (now: number) => new Date(now).toISOString().slice(0, 10);
const digest = (value: string) => createHash('sha256').update(value).digest('hex');

/** Stores the opening sealed for the user; runs inside the resolving transaction. */
export async function keepProof(w: ProofWork, p: Proven): Promise<void> {
  const dataKey = await dataKeyOf(w.ctx, w.db, w.userId);
  await saveOpening(w.db, {
    authId: w.authId,
    userId: w.userId,
    dataKey,
    commitment: p.proof.commitment,
    opening: p.opening,
    now: w.now,
  });
}

/** `age_over_N` proof for an entrance context on the context's UTC date. */
export function ageProofJob(
  ctx: AppContext,
  authId: string,
  now: number,
  dateOfBirth: string,
  minimumAge: number,
  source: string,
): ProofJob {
  return {
    name: 'age_proof',
    key: `age|${authId}|${minimumAge}|${utcDay(now)}|${digest(dateOfBirth)}|${source}`,
    run: async () => {
      const started = performance.now();
      const { proveAgeForContext } = await prover();
      const res = await proveAgeForContext(ctx.keyring.zkServiceKey(), {
        dateOfBirth,
        authId,
        minimumAge,
        withProof: true,
        now: new Date(now),
        source,
      });
      proofTimings.last_ms.push(performance.now() - started);
      return res.value && res.proof && res.opening ? { proof: res.proof, opening: res.opening } : undefined;
    },
  };
}

/** in_set proof; only asked for when the value is in the set. */
export function inSetProofJob(
  ctx: AppContext,
  authId: string,
  now: number,
  predicate: InSetPredicate,
  value: string,
): ProofJob {
  const set = JSON.stringify([...predicate.values]);
  return {
    name: inSetProofName(predicate.attribute),
    key: `in_set|${authId}|${predicate.attribute}|${digest(set)}|${utcDay(now)}|${digest(value)}`,
    run: async () => {
      const started = performance.now();
      const { provePredicate } = await prover();
      const res = await provePredicate(ctx.keyring.zkServiceKey(), {
        value,
        authId,
        predicate: { type: 'in_set', attribute: predicate.attribute, values: [...predicate.values] },
        date: utcDay(now),
      });
      proofTimings.last_ms.push(performance.now() - started);
      return res;
    },
  };
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
