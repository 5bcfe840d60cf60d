import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { releaseZkResources } from '@palmid/zk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attestBody,
  createTestApp,
  seedUser,
  seedVendor,
  type TestApp,
  vendorDevice,
} from '../../../dev/testing.ts';
import { writeAttribute } from '../attributes/service.ts';
import { grantConsent } from '../consents/service.ts';
import { addPalm, dataKeyOf } from '../users/service.ts';

/**
 * The vendor's offline check as a separate process: `npm run vendor -- verify-proof` on a status response
 * and key saved from the real server flow (POST /api/v1/auth, GET /api/v1/auth/{id}/status, GET /api/v1/keys/zk).
 */
const ROOT = new URL('../../../../', import.meta.url).pathname;
const run = promisify(execFile);
const TEMPLATE = Buffer.from('palm-template-verify-cli-01').toString('base64');
const clock = Date.parse('2026-06-01T12:00:00Z');

/** `npm run vendor -- …` (the command's home) or, for the kept alias, `npm run palm -- …`. */
async function cli(
  tool: 'vendor' | 'palm',
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('npm', ['run', '--silent', tool, '--', ...args], {
      cwd: ROOT,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('npm run vendor -- verify-proof on a proof from the server', () => {
  let t: TestApp;
  let statusFile: string;
  let keyFile: string;
  let authId: string;

  beforeAll(async () => {
    t = await createTestApp({}, () => clock);
    const vendor = await seedVendor(t.ctx, 'Door Co');
    const user = await seedUser(t.ctx);
    const db = t.ctx.database.db;
    const template = new Uint8Array(Buffer.from(TEMPLATE, 'base64'));
    const palmId = await addPalm(t.ctx, db, user.userId, await dataKeyOf(t.ctx, db, user.userId), {
      hand: 'left',
      template,
    });
    t.ctx.gallery.add({ palmId, userId: user.userId, hand: 'left', template });
    await writeAttribute(
      t.ctx,
      db,
      user.userId,
      { name: 'date_of_birth', value: '1999-02-28' },
      'user',
      clock,
    );
    await grantConsent(
      db,
      user.userId,
      {
        vendor_id: vendor.vendor_id,
        // kept for the vendor a while: the status read below still carries the proof (retention 0 would not)
        attributes: [{ name: 'age_over_18', purpose: 'door', retention_days: 1 }],
      },
      clock,
    );
    const headers = { 'x-api-key': vendor.api_key };
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth',
      headers,
      payload: attestBody(
        await vendorDevice(t.ctx, vendor.vendor_id),
        {
          auth_context: { type: 'entrance', minimum_age: 18, attributes_optional: ['age_proof'] },
          palm: { template: TEMPLATE },
        },
        clock,
      ),
    });
    authId = created.json().data.auth_id;
    const status = await t.app.inject({ method: 'GET', url: `/api/v1/auth/${authId}/status`, headers });
    const key = await t.app.inject({ method: 'GET', url: '/api/v1/keys/zk' });
    statusFile = join(t.dir, 'status.json');
    keyFile = join(t.dir, 'zk-key.json');
    writeFileSync(statusFile, status.body);
    writeFileSync(keyFile, key.body);
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await releaseZkResources();
  });

  const at = new Date(clock).toISOString();

  it("VALID for the saved status response with the vendor's auth id", async () => {
    const res = await cli('vendor', [
      'verify-proof',
      '--proof',
      statusFile,
      '--key',
      keyFile,
      '--minimum-age',
      '18',
      '--now',
      at,
      '--auth-id',
      authId,
    ]);
    expect(res.stdout).toContain(`VALID: age >= 18 on 2026-06-01, auth_id ${authId}`);
    expect(res.code).toBe(0);
  }, 90_000);

  it('INVALID (exit 1) for another auth id, a higher age, or a tampered proof', async () => {
    const other = await cli('palm', [
      'verify-proof',
      '--proof',
      statusFile,
      '--key',
      keyFile,
      '--minimum-age',
      '18',
      '--now',
      at,
      '--auth-id',
      '00000000-0000-4000-8000-000000000000',
      '--json',
    ]);
    expect(other.code).toBe(1);
    expect(JSON.parse(other.stdout)).toMatchObject({ valid: false, reason: 'auth_id_mismatch' });
    const older = await cli('vendor', [
      'verify-proof',
      '--proof',
      statusFile,
      '--key',
      keyFile,
      '--minimum-age',
      '21',
      '--now',
      at,
      '--auth-id',
      authId,
    ]);
    expect(older.code).toBe(1);
    expect(older.stdout).toContain('INVALID (predicate_mismatch)');
    const doc = JSON.parse(readFileSync(statusFile, 'utf8'));
    const pi = doc.data.auth_result.attributes.age_proof.proof.pi_c;
    pi[0] = (BigInt(pi[0]) + 1n).toString();
    const tamperedFile = join(t.dir, 'tampered.json');
    writeFileSync(tamperedFile, JSON.stringify(doc));
    const tampered = await cli('vendor', [
      'verify-proof',
      '--proof',
      tamperedFile,
      '--key',
      keyFile,
      '--minimum-age',
      '18',
      '--now',
      at,
      '--auth-id',
      authId,
    ]);
    expect(tampered.code).toBe(1);
    expect(tampered.stdout).toContain('INVALID (invalid_proof)');
  }, 120_000);
});
