import { createPrivateKey } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAttestation } from '@palmid/contracts/crypto/attestation';
import { attestPalms, type TestDevice } from '@palmid/server/dev/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  bindDevice,
  lastJson,
  run,
  type ServerProc,
  sqliteServerEnv,
  startServer,
  tempDir,
} from './harness.ts';

/**
 * Issue 6 across real processes: the server (main.ts), the admin CLI (vendor and verifier), the palm CLI
 * (a template from the real pipeline, then `verify-proof` on the vendor's saved response). The person is
 * created through the vendor API, consents and submits an attestation through the user API, and the
 * vendor's one-shot entrance context returns an age proof and a membership proof.
 */
describe('zero-knowledge proofs across processes', () => {
  const tmp = tempDir('palmid-e2e-zk-');
  const env = sqliteServerEnv(tmp.dir);
  let server: ServerProc;
  let vendor: { vendor_id: string; api_key: string };
  let template: string;
  let authId: string;
  let host: TestDevice;
  const files = { status: join(tmp.dir, 'status.json'), key: join(tmp.dir, 'zk-key.json') };

  const admin = async <T>(...args: string[]) =>
    lastJson<T>(
      await run('server/src/cli/admin.ts', ['--json', ...args], {
        DATABASE_URL: env.DATABASE_URL,
        PALMID_KEY_FILE: env.PALMID_KEY_FILE,
      }),
    );
  const verifyProof = async (args: string[]) => {
    try {
      return { code: 0, out: await run('palm-lab/src/cli.ts', ['verify-proof', ...args]) };
    } catch (err) {
      const m = /exited (\d+):\n([\s\S]*)$/.exec((err as Error).message);
      return { code: Number(m?.[1] ?? -1), out: m?.[2] ?? '' };
    }
  };

  beforeAll(async () => {
    server = await startServer(env);
    vendor = await admin('vendor', 'create', '--name', 'Club Z');
    // Club Z's own capture host (docs/vendor-api.md "Attested palms")
    host = await bindDevice(
      server.base,
      await admin<{ pvs_id: string; device_token: string; provisioning_secret: string }>(
        'pvs',
        'create',
        '--name',
        'Club Z door',
        '--vendor',
        vendor.vendor_id,
      ),
    );
    // A template made by the real extractor from a synthetic frame (--roi: the template only has to be
    // well formed and the same at enrolment and identification; liveness is not under test here).
    const synthDir = join(tmp.dir, 'synth');
    await run('palm-lab/src/cli.ts', [
      'synth',
      synthDir,
      '--identities',
      '1',
      '--captures',
      '1',
      '--hand',
      'right',
    ]);
    const sub = readdirSync(synthDir, { withFileTypes: true }).find((d) => d.isDirectory())!.name;
    const png = join(synthDir, sub, readdirSync(join(synthDir, sub)).find((f) => f.endsWith('.png'))!);
    const out = join(tmp.dir, 'template.bin');
    await run('palm-lab/src/cli.ts', ['extract', png, '--roi', '--out', out]);
    template = readFileSync(out).toString('base64');
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
    tmp.remove();
  });

  it('a vendor receives an age proof and a membership proof it can verify offline', async () => {
    const verifier = await admin<{
      verifier_id: string;
      kid: string;
      public_jwk: { kty: 'OKP'; crv: 'Ed25519'; x: string };
      private_jwk: Record<string, string>;
    }>('verifier', 'create', '--name', 'Gym chain', '--attributes', 'membership_status');
    expect(verifier.private_jwk.d).toBeTruthy();
    const listed = await admin<{ verifier_id: string }[]>('verifier', 'list');
    expect(JSON.stringify(listed)).not.toContain(verifier.private_jwk.d!);

    const user = await api<{ data: { user_id: string; user_token: string } }>(
      server.base,
      'POST',
      '/api/v1/mpc/users/create',
      {
        key: vendor.api_key,
        body: {
          attributes: { date_of_birth: '2000-01-15' },
          palms: attestPalms(host, [{ hand: 'right' as const, template }]),
        },
      },
    );
    expect(user.status).toBe(201);
    const { user_token } = user.body.data;
    // an attestation names the user as the user knows itself: the internal id (the vendor holds its own id)
    const user_id = (
      await api<{ data: { value: string } }>(server.base, 'GET', '/v1/attributes/user_id', {
        token: user_token,
      })
    ).body.data.value;
    expect(user_id).not.toBe(user.body.data.user_id);

    const consent = await api(server.base, 'POST', '/v1/consents', {
      token: user_token,
      body: {
        vendor_id: vendor.vendor_id,
        attributes: [
          // kept a day: the saved status response below still carries the proof (retention 0 would not)
          { name: 'age_over_21', purpose: 'entry', retention_days: 1 },
          // the consent names the set the bar may ask about (docs/security.md: predicates disclose no more than consented)
          {
            name: 'membership_status_in_set',
            purpose: 'members only',
            retention_days: 0,
            values: ['gold', 'platinum'],
          },
        ],
      },
    });
    expect(consent.status).toBe(201);

    // The verifier, with the private key the admin CLI printed once, attests the membership.
    const attestation = createAttestation(
      {
        verifierId: verifier.verifier_id,
        kid: verifier.kid,
        publicKey: verifier.public_jwk,
        privateKey: createPrivateKey({ key: verifier.private_jwk, format: 'jwk' }),
      },
      {
        subject: user_id,
        attribute: 'membership_status',
        value: 'gold',
        validUntil: new Date(Date.now() + 86_400_000),
      },
    );
    const stored = await api(server.base, 'POST', '/v1/attributes/verified', {
      token: user_token,
      body: { attestation },
    });
    expect(stored.status).toBe(200);
    expect(stored.body.data).toMatchObject({ verified_by: verifier.verifier_id });

    const started = Date.now();
    const res = await api<{
      data: { auth_id: string; status: string; auth_result: { attributes: Record<string, unknown> } };
    }>(server.base, 'POST', '/api/v1/auth', {
      key: vendor.api_key,
      body: {
        auth_context: {
          type: 'entrance',
          minimum_age: 21,
          attributes_optional: ['age_proof'],
          predicates: [{ type: 'in_set', attribute: 'membership_status', values: ['gold', 'platinum'] }],
        },
        palm: host.direct({ template }),
      },
    });
    const ms = Date.now() - started;
    expect(res.status).toBe(200);
    expect(res.body.data.status, JSON.stringify(res.body.data)).toBe('completed');
    const attrs = res.body.data.auth_result.attributes;
    expect(attrs).toMatchObject({ age_over_21: true, membership_status_in_set: true });
    expect(attrs.age_proof).toBeDefined();
    expect(attrs.membership_status_proof).toBeDefined();
    expect(JSON.stringify(res.body)).not.toContain('2000-01-15');
    authId = res.body.data.auth_id;
    console.log(`e2e one-shot entrance with two proofs: ${ms} ms wall (server process)`);

    const status = await fetch(`${server.base}/api/v1/auth/${authId}/status`, {
      headers: { 'x-api-key': vendor.api_key },
    });
    writeFileSync(files.status, await status.text());
    writeFileSync(files.key, await (await fetch(`${server.base}/api/v1/keys/zk`)).text());
    writeFileSync(join(tmp.dir, 'membership.json'), JSON.stringify(attrs.membership_status_proof));
  }, 120_000);

  it('npm run palm -- verify-proof: VALID for both proofs, INVALID for another auth id', async () => {
    const age = await verifyProof([
      '--proof',
      files.status,
      '--key',
      files.key,
      '--auth-id',
      authId,
      '--minimum-age',
      '21',
    ]);
    expect(age.out).toContain(`VALID: age >= 21`);
    expect(age.code).toBe(0);
    const member = await verifyProof([
      '--proof',
      join(tmp.dir, 'membership.json'),
      '--key',
      files.key,
      '--auth-id',
      authId,
      '--in-set',
      'membership_status=gold,platinum',
    ]);
    expect(member.out).toContain('VALID: membership_status in {gold, platinum}');
    const replay = await verifyProof([
      '--proof',
      files.status,
      '--key',
      files.key,
      '--minimum-age',
      '21',
      '--auth-id',
      '11111111-1111-4111-8111-111111111111',
    ]);
    expect(replay.code).toBe(1);
    expect(replay.out).toContain('INVALID (auth_id_mismatch)');
  }, 120_000);
});
