/**
 * Offline verifier for vendors: checks a palmid zero-knowledge proof against the service's published
 * proof key, the vendor's auth id and the predicate it asked for. No network access.
 *
 *   npx tsx server/src/cli/verify-proof.ts --proof proof.json --key zk-key.json --auth-id <id> --minimum-age 21
 *   (exposed as `npm run vendor -- verify-proof ...`; `npm run palm -- verify-proof` is kept as an alias)
 *
 * Exit code: 0 valid, 1 invalid, 2 unusable input.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { releaseZkResources, useSingleThreadedEngine } from '@palmid/zk/artifacts';
import { parseServicePublicKey } from '@palmid/zk/keys';
import type { ServicePublicKey } from '@palmid/zk/schema';
import { type VerifyExpectations, verifyPredicateProof } from '@palmid/zk/verify';
import { Command, InvalidArgumentError } from 'commander';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function readJson(path: string): unknown {
  const text = path === '-' ? readFileSync(0, 'utf8') : readFileSync(path, 'utf8');
  return JSON.parse(text);
}

/** The proof document, also inside a saved status response, `auth.updated` message or auth_result; and its auth_id. */
export function extractProof(doc: unknown): { proof: unknown; authId?: string } {
  let node: unknown = doc;
  let authId: string | undefined;
  for (let depth = 0; depth < 5 && isObject(node); depth++) {
    if (typeof node.format === 'string')
      return authId === undefined ? { proof: node } : { proof: node, authId };
    if (typeof node.auth_id === 'string') authId = node.auth_id;
    node = node.age_proof ?? node.data ?? node.params ?? node.auth_result ?? node.attributes;
  }
  return { proof: doc };
}

/** The key, given as the JWK itself, the `/api/v1/keys/zk` envelope, or a JWKS (picked by kid). */
export function extractKey(doc: unknown, kid?: string): ServicePublicKey {
  const node = isObject(doc) && isObject(doc.data) ? doc.data : doc;
  if (isObject(node) && Array.isArray(node.keys)) {
    const keys = node.keys.filter(isObject);
    const chosen = keys.find((k) => kid === undefined || k.kid === kid) ?? keys[0];
    return parseServicePublicKey(chosen);
  }
  return parseServicePublicKey(node);
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a non-negative integer');
  return n;
}

function inSet(value: string): { attribute: string; values: string[] } {
  const m = /^([a-z][a-z0-9_]*)=(.+)$/.exec(value);
  if (!m?.[1] || !m[2]) throw new InvalidArgumentError('expected attribute=value1,value2');
  return { attribute: m[1], values: m[2].split(',').map((v) => v.trim()) };
}

function instant(value: string): Date {
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw new InvalidArgumentError('expected an ISO 8601 date or time');
  return d;
}

interface Options {
  proof: string;
  key: string;
  authId?: string;
  minimumAge?: number;
  inSet?: { attribute: string; values: string[] };
  now?: Date;
  maxSkewDays?: number;
  json?: boolean;
}

/** The `verify-proof` command, for embedding in another commander program. */
export function verifyProofCommand(
  setExitCode: (code: number) => void = (c) => {
    process.exitCode = c;
  },
): Command {
  return new Command('verify-proof')
    .description('verify a palmid zero-knowledge proof offline (age over N, or attribute in a set)')
    .requiredOption(
      '--proof <file>',
      'proof JSON: the age_proof document or a whole auth status response ("-" for stdin)',
    )
    .requiredOption('--key <file>', 'service proof key JSON from GET /api/v1/keys/zk (JWK, envelope or JWKS)')
    .option(
      '--auth-id <id>',
      'required: the auth context you created (the auth_id inside the proof is what is checked, never trusted)',
    )
    .option(
      '--minimum-age <n>',
      'require an age_over statement of at least n years (this or --in-set is required)',
      positiveInt,
    )
    .option(
      '--in-set <attribute=v1,v2>',
      'require an in_set statement within these values (this or --minimum-age is required)',
      inSet,
    )
    .option('--now <iso>', 'verify as of this instant (default: now)', instant)
    .option(
      '--max-skew-days <n>',
      'accepted distance between statement date and today (default 1)',
      positiveInt,
    )
    .option('--json', 'print the result as JSON')
    .action(async (opts: Options) => {
      // A proof only means something against what this vendor asked: its own context and predicate. The
      // auth_id and statement inside the document are the prover's, so they are never the expectation.
      const usage = !opts.authId
        ? 'error: --auth-id <id> is required: the auth context you created (a proof of another context is a replay)'
        : opts.minimumAge === undefined && opts.inSet === undefined
          ? 'error: a predicate is required: --minimum-age <n> or --in-set <attribute=v1,v2>, as your context asked'
          : undefined;
      if (usage) {
        console.error(usage);
        setExitCode(2);
        return;
      }
      const authId = opts.authId!;
      let proofDoc: unknown;
      let expect: VerifyExpectations;
      try {
        const { proof } = extractProof(readJson(opts.proof));
        proofDoc = proof;
        const kid = isObject(proof) && isObject(proof.statement) ? proof.statement.kid : undefined;
        const serviceKey = extractKey(readJson(opts.key), typeof kid === 'string' ? kid : undefined);
        expect = {
          serviceKey,
          authId,
          ...(opts.minimumAge !== undefined ? { minimumAge: opts.minimumAge } : {}),
          ...(opts.inSet !== undefined ? { inSet: opts.inSet } : {}),
          ...(opts.now !== undefined ? { now: opts.now } : {}),
          ...(opts.maxSkewDays !== undefined ? { maxSkewDays: opts.maxSkewDays } : {}),
        };
      } catch (err) {
        console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
        setExitCode(2);
        return;
      }
      await useSingleThreadedEngine();
      const result = await verifyPredicateProof(proofDoc, expect);
      await releaseZkResources();
      if (opts.json) console.log(JSON.stringify(result, null, 2));
      else if (result.valid) {
        const p = result.statement.predicate;
        const claim =
          p.type === 'age_over' ? `age >= ${p.minimum_age}` : `${p.attribute} in {${p.values.join(', ')}}`;
        console.log(
          `VALID: ${claim} on ${result.statement.date}, auth_id ${result.statement.auth_id}, key ${result.statement.kid}`,
        );
      } else console.log(`INVALID (${result.reason}): ${result.detail}`);
      setExitCode(result.valid ? 0 : 1);
    });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await verifyProofCommand().parseAsync(process.argv);
}
