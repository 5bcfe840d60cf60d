import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { releaseZkResources } from '@palmid/zk/artifacts';
import { generateServiceKey, type ServiceKeyPair } from '@palmid/zk/keys';
import { proveAgeForContext } from '@palmid/zk/prove';
import type { PredicateProof } from '@palmid/zk/schema';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { verifyProofCommand } from './verify-proof.ts';

const NOW = '2026-11-23T10:00:00Z';
const AUTH_ID = '0b7f2d1c-3e4a-4b5c-8d6e-7f8091a2b3c4';
let dir: string;
let key: ServiceKeyPair;
let proof: PredicateProof;

async function run(...args: string[]): Promise<{ code: number; out: string }> {
  let code = -1;
  const lines: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((m: string) => lines.push(m));
  const err = vi.spyOn(console, 'error').mockImplementation((m: string) => lines.push(m));
  try {
    await verifyProofCommand((c) => {
      code = c;
    }).parseAsync(args, { from: 'user' });
  } finally {
    log.mockRestore();
    err.mockRestore();
  }
  return { code, out: lines.join('\n') };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'palmid-verify-cli-'));
  key = generateServiceKey();
  const result = await proveAgeForContext(key, {
    dateOfBirth: '1999-01-01',
    authId: AUTH_ID,
    minimumAge: 21,
    withProof: true,
    now: new Date(NOW),
  });
  proof = result.proof as PredicateProof;
  // As a vendor would save them: the status response around the proof, and the key envelope.
  const status = {
    data: {
      auth_id: AUTH_ID,
      status: 'completed',
      auth_result: { attributes: { age_over_21: true, age_proof: proof } },
    },
  };
  writeFileSync(join(dir, 'status.json'), JSON.stringify(status));
  writeFileSync(join(dir, 'proof.json'), JSON.stringify(proof));
  writeFileSync(join(dir, 'key.json'), JSON.stringify({ data: key.publicKey }));
  writeFileSync(join(dir, 'other-key.json'), JSON.stringify(generateServiceKey().publicKey));
});

afterAll(releaseZkResources);

describe('verify-proof CLI', () => {
  it('accepts a valid proof from the saved status response', async () => {
    const { code, out } = await run(
      '--proof',
      join(dir, 'status.json'),
      '--key',
      join(dir, 'key.json'),
      '--auth-id',
      AUTH_ID,
      '--minimum-age',
      '21',
      '--now',
      NOW,
    );
    expect(code).toBe(0);
    expect(out).toContain(`VALID: age >= 21 on 2026-11-23, auth_id ${AUTH_ID}`);
  });

  it('exits 1 with the reason for another auth id, a higher age or another key', async () => {
    const base = ['--proof', join(dir, 'proof.json'), '--now', NOW];
    const other = await run(
      ...base,
      '--key',
      join(dir, 'key.json'),
      '--auth-id',
      'another',
      '--minimum-age',
      '21',
    );
    expect(other).toMatchObject({ code: 1 });
    expect(other.out).toContain('INVALID (auth_id_mismatch)');
    const older = await run(
      ...base,
      '--key',
      join(dir, 'key.json'),
      '--auth-id',
      AUTH_ID,
      '--minimum-age',
      '25',
      '--json',
    );
    expect(older.code).toBe(1);
    expect(JSON.parse(older.out)).toMatchObject({ valid: false, reason: 'predicate_mismatch' });
    const wrongKey = await run(
      ...base,
      '--key',
      join(dir, 'other-key.json'),
      '--auth-id',
      AUTH_ID,
      '--minimum-age',
      '21',
    );
    expect(wrongKey.out).toContain('INVALID (untrusted_service_key)');
  });

  it('exits 2 without --auth-id (even when the document names one) or without a predicate', async () => {
    const noAuth = await run(
      '--proof',
      join(dir, 'status.json'),
      '--key',
      join(dir, 'key.json'),
      '--minimum-age',
      '21',
      '--now',
      NOW,
    );
    expect(noAuth.code).toBe(2);
    expect(noAuth.out).toContain('--auth-id <id> is required');
    expect(noAuth.out).not.toContain('VALID');
    const noPredicate = await run(
      '--proof',
      join(dir, 'status.json'),
      '--key',
      join(dir, 'key.json'),
      '--auth-id',
      AUTH_ID,
      '--now',
      NOW,
    );
    expect(noPredicate.code).toBe(2);
    expect(noPredicate.out).toContain('a predicate is required');
  });

  it('as a process: exit 2 and one clear line when --auth-id is omitted', () => {
    const res = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        fileURLToPath(new URL('./verify-proof.ts', import.meta.url)),
        '--proof',
        join(dir, 'status.json'),
        '--key',
        join(dir, 'key.json'),
        '--minimum-age',
        '21',
      ],
      { encoding: 'utf8' },
    );
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('--auth-id <id> is required');
    expect(res.stderr).not.toMatch(/\n\s+at /);
    expect(res.stdout).not.toContain('VALID');
  });

  it('exits 2 on an unreadable key file', async () => {
    writeFileSync(join(dir, 'bad-key.json'), '{"kty":"RSA"}');
    const { code, out } = await run(
      '--proof',
      join(dir, 'proof.json'),
      '--key',
      join(dir, 'bad-key.json'),
      '--auth-id',
      AUTH_ID,
      '--minimum-age',
      '21',
    );
    expect(code).toBe(2);
    expect(out).toContain('error:');
  });
});
