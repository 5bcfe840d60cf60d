import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { zKey } from 'snarkjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { computeWitness, provingKey, releaseZkResources, VERIFICATION_KEY } from './artifacts.ts';
import { encodeAttributeValue } from './encoding.ts';
import {
  generateServiceKey,
  parseServicePublicKey,
  type ServiceKeyPair,
  serviceKeyFromSeed,
  signBytes,
} from './keys.ts';
import { proveAgeForContext, provePredicate, ZkPredicateFalseError } from './prove.ts';
import type { PredicateProof, Statement } from './schema.ts';
import { publicSignals, signedPayload } from './signals.ts';
import { verifyPredicateProof } from './verify.ts';

const NOW = new Date('2026-11-23T10:00:00Z');
const AUTH_ID = '6f1c2a4e-8b3d-4c5e-9f7a-1b2c3d4e5f60';
const DOB = '2005-11-23'; // exactly 21 on NOW

let key: ServiceKeyPair;
let ageProof: PredicateProof;

/** A copy of the proof whose statement is changed and re-signed with the service key: only the SNARK
 *  can still catch the change. */
function resigned(
  proof: PredicateProof,
  change: Partial<Statement>,
  signer: ServiceKeyPair = key,
): PredicateProof {
  const statement = { ...proof.statement, ...change } as Statement;
  return { ...proof, statement, signature: signBytes(signer, signedPayload(statement, proof.commitment)) };
}

beforeAll(async () => {
  key = generateServiceKey();
  const result = await proveAgeForContext(key, {
    dateOfBirth: DOB,
    authId: AUTH_ID,
    minimumAge: 21,
    withProof: true,
    now: NOW,
  });
  expect(result).toMatchObject({ name: 'age_over_21', value: true });
  ageProof = result.proof as PredicateProof;
});

afterAll(releaseZkResources);

describe('age proof', () => {
  const expectations = () => ({ serviceKey: key.publicKey, authId: AUTH_ID, minimumAge: 21, now: NOW });

  it('verifies offline with the pinned service key, auth id and age', async () => {
    const result = await verifyPredicateProof(JSON.parse(JSON.stringify(ageProof)), expectations());
    expect(result).toEqual({ valid: true, statement: ageProof.statement });
    // A vendor asking for a lower age accepts a proof of a higher one.
    expect((await verifyPredicateProof(ageProof, { ...expectations(), minimumAge: 18 })).valid).toBe(true);
  });

  it('does not disclose the birth date, and two proofs of the same user are unlinkable', async () => {
    const args = { dateOfBirth: '1990-05-17', authId: AUTH_ID, minimumAge: 21, withProof: true, now: NOW };
    const first = await proveAgeForContext(key, args);
    const text = JSON.stringify(first.proof);
    expect(text).not.toContain('1990-05-17');
    expect(text).not.toContain('19900517');
    const again = await proveAgeForContext(key, args);
    expect(again.proof?.commitment).not.toBe(first.proof?.commitment);
    expect((await verifyPredicateProof(again.proof, expectations())).valid).toBe(true);
  });

  it('rejects a tampered proof', async () => {
    const a = ageProof.proof.pi_a;
    const tampered = { ...ageProof, proof: { ...ageProof.proof, pi_a: [a[1], a[0], a[2]] as string[] } };
    expect(await verifyPredicateProof(tampered, expectations())).toMatchObject({
      valid: false,
      reason: 'invalid_proof',
    });
    const c = ageProof.proof.pi_c;
    const swapped = { ...ageProof, proof: { ...ageProof.proof, pi_a: c, pi_c: a } };
    expect(await verifyPredicateProof(swapped, expectations())).toMatchObject({
      valid: false,
      reason: 'invalid_proof',
    });
    // Another commitment under the same signature.
    const other = { ...ageProof, commitment: (BigInt(ageProof.commitment) + 1n).toString() };
    expect(await verifyPredicateProof(other, expectations())).toMatchObject({
      valid: false,
      reason: 'bad_signature',
    });
  });

  it('rejects a proof replayed for another auth id, whether or not the statement is re-signed', async () => {
    const expectOther = { ...expectations(), authId: 'another-auth-id' };
    expect(await verifyPredicateProof(ageProof, expectOther)).toMatchObject({
      valid: false,
      reason: 'auth_id_mismatch',
    });
    const edited = { ...ageProof, statement: { ...ageProof.statement, auth_id: 'another-auth-id' } };
    expect(await verifyPredicateProof(edited, expectOther)).toMatchObject({
      valid: false,
      reason: 'bad_signature',
    });
    const forged = resigned(ageProof, { auth_id: 'another-auth-id' });
    expect(await verifyPredicateProof(forged, expectOther)).toMatchObject({
      valid: false,
      reason: 'invalid_proof',
    });
  });

  it('rejects another N, whether or not the statement is re-signed', async () => {
    expect(await verifyPredicateProof(ageProof, { ...expectations(), minimumAge: 25 })).toMatchObject({
      valid: false,
      reason: 'predicate_mismatch',
    });
    const forged = resigned(ageProof, { predicate: { type: 'age_over', minimum_age: 25 } });
    expect(await verifyPredicateProof(forged, { ...expectations(), minimumAge: 25 })).toMatchObject({
      valid: false,
      reason: 'invalid_proof',
    });
    // Same N on another date moves the cutoff: the SNARK refuses that too.
    const moved = resigned(ageProof, { date: '2026-11-22' });
    expect(await verifyPredicateProof(moved, expectations())).toMatchObject({
      valid: false,
      reason: 'invalid_proof',
    });
  });

  it('rejects a proof checked against another service key', async () => {
    const other = generateServiceKey();
    expect(
      await verifyPredicateProof(ageProof, { ...expectations(), serviceKey: other.publicKey }),
    ).toMatchObject({
      valid: false,
      reason: 'untrusted_service_key',
    });
    // Claiming the other key's kid does not help without its private key.
    const relabelled = { ...ageProof, statement: { ...ageProof.statement, kid: other.publicKey.kid } };
    expect(
      await verifyPredicateProof(relabelled, { ...expectations(), serviceKey: other.publicKey }),
    ).toMatchObject({
      valid: false,
      reason: 'bad_signature',
    });
  });

  it('never accepts a document with any one field changed, and never throws', async () => {
    // Every leaf except public_signals (an informative copy the verifier does not use).
    const leaves: (string | number)[][] = [];
    const walk = (node: unknown, path: (string | number)[]) => {
      if (node !== null && typeof node === 'object') {
        for (const [k, v] of Object.entries(node))
          if (k !== 'public_signals') walk(v, [...path, Array.isArray(node) ? Number(k) : k]);
      } else leaves.push(path);
    };
    walk(ageProof, []);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...leaves),
        fc.oneof(
          fc.string(),
          fc.integer(),
          fc.constant('1'),
          fc.constant('0'),
          fc.bigInt({ min: 0n, max: 2n ** 254n }).map(String),
        ),
        async (path, replacement) => {
          const doc = JSON.parse(JSON.stringify(ageProof));
          let parent = doc;
          for (const k of path.slice(0, -1)) parent = parent[k];
          const last = path[path.length - 1] as string | number;
          fc.pre(String(parent[last]) !== String(replacement));
          parent[last] = replacement;
          const result = await verifyPredicateProof(doc, expectations());
          expect(result.valid).toBe(false);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('rejects stale statements and garbage', async () => {
    const later = new Date(NOW.getTime() + 3 * 86_400_000);
    expect(await verifyPredicateProof(ageProof, { ...expectations(), now: later })).toMatchObject({
      valid: false,
      reason: 'date_out_of_range',
    });
    expect(await verifyPredicateProof({ hello: 'world' }, expectations())).toMatchObject({
      valid: false,
      reason: 'malformed',
    });
    const offCurve = { ...ageProof, proof: { ...ageProof.proof, pi_a: ['1', '3', '1'] } };
    expect(await verifyPredicateProof(offCurve, expectations())).toMatchObject({
      valid: false,
      reason: 'invalid_proof',
    });
  });

  it('gives no proof for a user aged N minus one day, and the circuit refuses such a witness', async () => {
    const young = '2005-11-24';
    const result = await proveAgeForContext(key, {
      dateOfBirth: young,
      authId: AUTH_ID,
      minimumAge: 21,
      withProof: true,
      now: NOW,
    });
    expect(result).toEqual({ name: 'age_over_21', value: false });
    await expect(
      provePredicate(key, {
        value: young,
        authId: AUTH_ID,
        predicate: { type: 'age_over', minimum_age: 21 },
        date: '2026-11-23',
      }),
    ).rejects.toBeInstanceOf(ZkPredicateFalseError);
    // Bypassing the JS check: the circuit's constraints reject the witness.
    const signals = publicSignals({ ...ageProof.statement }, '0');
    const input = {
      binding: signals[1],
      attrTag: signals[2],
      kind: signals[3],
      bound: signals[4],
      set: signals.slice(5),
      value: encodeAttributeValue('date_of_birth', young).toString(),
      salt: '12345',
    };
    const quiet = vi.spyOn(console, 'error').mockImplementation(() => undefined); // circom_runtime's own report
    await expect(computeWitness(input)).rejects.toThrow(/Assert Failed/);
    quiet.mockRestore();
    await expect(
      computeWitness({ ...input, value: encodeAttributeValue('date_of_birth', DOB).toString() }),
    ).resolves.toBeInstanceOf(Uint8Array);
  });

  it('handles a 29 February birthday in a common year', async () => {
    const leapling = '2004-02-29';
    const feb28 = new Date('2025-02-28T12:00:00Z');
    const mar1 = new Date('2025-03-01T12:00:00Z');
    expect(
      (
        await proveAgeForContext(key, {
          dateOfBirth: leapling,
          authId: AUTH_ID,
          minimumAge: 21,
          withProof: true,
          now: feb28,
        })
      ).value,
    ).toBe(false);
    const ok = await proveAgeForContext(key, {
      dateOfBirth: leapling,
      authId: AUTH_ID,
      minimumAge: 21,
      withProof: true,
      now: mar1,
    });
    expect(ok.value).toBe(true);
    const v = await verifyPredicateProof(ok.proof, {
      serviceKey: key.publicKey,
      authId: AUTH_ID,
      minimumAge: 21,
      now: mar1,
    });
    expect(v.valid).toBe(true);
  });
});

describe('set membership proof', () => {
  const set = { attribute: 'membership_status', values: ['gold', 'platinum'] };

  it('proves membership without disclosing which member, and binds the set', async () => {
    const { proof } = await provePredicate(key, {
      value: 'platinum',
      authId: AUTH_ID,
      predicate: { type: 'in_set', ...set },
      date: '2026-11-23',
    });
    expect(JSON.stringify({ ...proof, statement: undefined })).not.toContain('platinum');
    const expectations = { serviceKey: key.publicKey, authId: AUTH_ID, inSet: set, now: NOW };
    expect((await verifyPredicateProof(proof, expectations)).valid).toBe(true);
    // A vendor accepting only gold does not accept "gold or platinum".
    expect(
      await verifyPredicateProof(proof, { ...expectations, inSet: { ...set, values: ['gold'] } }),
    ).toMatchObject({
      valid: false,
      reason: 'predicate_mismatch',
    });
    const forged = resigned(proof, {
      predicate: { type: 'in_set', attribute: 'membership_status', values: ['gold'] },
    });
    expect(
      await verifyPredicateProof(forged, { ...expectations, inSet: { ...set, values: ['gold'] } }),
    ).toMatchObject({
      valid: false,
      reason: 'invalid_proof',
    });
    // The attribute tag is bound too: the same proof is no vaccination proof.
    const renamed = resigned(proof, {
      predicate: { type: 'in_set', attribute: 'vaccination_status', values: set.values },
    });
    const vaxSet = { attribute: 'vaccination_status', values: set.values };
    expect(await verifyPredicateProof(renamed, { ...expectations, inSet: vaxSet })).toMatchObject({
      valid: false,
      reason: 'invalid_proof',
    });
  });

  it('refuses to prove statements a verifier could not parse', async () => {
    const predicate = { type: 'in_set' as const, ...set };
    await expect(provePredicate(key, { value: 'gold', authId: 'has spaces', predicate })).rejects.toThrow(
      /auth_id/,
    );
    const nine = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'gold'];
    await expect(
      provePredicate(key, { value: 'gold', authId: AUTH_ID, predicate: { ...predicate, values: nine } }),
    ).rejects.toThrow();
  });

  it('gives no proof for a value outside the set', async () => {
    await expect(
      provePredicate(key, {
        value: 'silver',
        authId: AUTH_ID,
        predicate: { type: 'in_set', ...set },
        date: '2026-11-23',
      }),
    ).rejects.toBeInstanceOf(ZkPredicateFalseError);
  });
});

describe('keys and artifacts', () => {
  it('derives the same published key from the same seed and refuses a key whose kid does not match', () => {
    const seed = new Uint8Array(32).fill(7);
    const a = serviceKeyFromSeed(seed);
    expect(serviceKeyFromSeed(seed).publicKey).toEqual(a.publicKey);
    expect(parseServicePublicKey(JSON.parse(JSON.stringify(a.publicKey)))).toEqual(a.publicKey);
    expect(() => parseServicePublicKey({ ...a.publicKey, kid: generateServiceKey().publicKey.kid })).toThrow(
      /kid/,
    );
  });

  it('ships a verification key that belongs to the shipped proving key', async () => {
    const manifest = JSON.parse(readFileSync(new URL('./artifacts/manifest.json', import.meta.url), 'utf8'));
    expect(createHash('sha256').update(provingKey()).digest('hex')).toBe(
      manifest.sha256['palmid_predicate.zkey'],
    );
    const derived = await zKey.exportVerificationKey({ type: 'mem', data: provingKey() });
    expect(derived).toEqual(VERIFICATION_KEY);
  });
});
