import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pseudonym } from '@palmid/contracts/crypto/ids';
import { FrameClient, TestDevice } from '@palmid/server/dev/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  bindDevice,
  cli,
  lastJson,
  run,
  type ServerProc,
  sqliteServerEnv,
  startServer,
  tempDir,
} from '../e2e/harness.ts';
import { randomTemplate } from '../support/templates.ts';

/**
 * Attested captures (docs/security.md) against a real server process over real HTTP and WebSocket:
 * a template alone never authenticates anyone; only a fresh capture signed by a registered device does.
 * RELIABILITY_FIGURES=1 prints the figures that docs/reliability.md quotes.
 */
type Kiosk = { pvs_id: string; device_token: string; provisioning_secret: string };
type Vendor = { vendor_id: string; api_key: string };
type AuthAnswer = {
  auth_id: string;
  status: string;
  auth_result: { success: boolean; user_id: string | null; reason?: string };
};

const palm = randomTemplate;

const figures: Record<string, unknown> = {};

describe('attested captures (real server process)', () => {
  const tmp = tempDir('palmid-attest-');
  const env = sqliteServerEnv(tmp.dir);
  let server: ServerProc;
  let shop: Vendor;
  let host: TestDevice;
  let hostKiosk: Kiosk;
  let enrolled: string;
  let userId: string;

  const admin = async <T>(...args: string[]) =>
    lastJson<T>(
      await run('server/src/cli/admin.ts', ['--json', ...args], {
        DATABASE_URL: env.DATABASE_URL,
        PALMID_KEY_FILE: env.PALMID_KEY_FILE,
      }),
    );
  const direct = async (key: string, palmBody: unknown) => {
    const r = await api<{ data: AuthAnswer; error?: { code: string; details: Record<string, unknown> } }>(
      server.base,
      'POST',
      '/api/v1/auth',
      { key, body: { auth_context: { type: 'login' }, palm: palmBody } },
    );
    return r;
  };
  const kioskSocket = (k: Kiosk) =>
    FrameClient.open(`${server.base.replace(/^http/, 'ws')}/ws/pvs`, {
      authorization: `Bearer ${k.device_token}`,
    });

  beforeAll(async () => {
    server = await startServer(env);
    shop = await admin<Vendor>('vendor', 'create', '--name', 'Corner Shop');
    hostKiosk = await admin<Kiosk>(
      'pvs',
      'create',
      '--name',
      'shop capture host',
      '--vendor',
      shop.vendor_id,
    );
    host = await bindDevice(server.base, hostKiosk);
    // A user enrolled at an enrolment kiosk (no vendor), with an attested enrolment.
    const enrolKiosk = await admin<Kiosk>('pvs', 'create', '--name', 'enrolment desk');
    const e = await kioskSocket(enrolKiosk);
    const eDevice = new TestDevice(enrolKiosk.pvs_id);
    await e.hello('h', eDevice, { provisioning_secret: enrolKiosk.provisioning_secret, mode: 'enrol' });
    enrolled = palm();
    // an enrolment without an attestation is refused before anything is stored
    const bare = await e.call('bare', 'enroll', {
      template: enrolled,
      hand: 'right',
      quality: 0.9,
      liveness: 0.9,
    });
    expect(bare.error).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'attestation_failed' } });
    const ok = await e.enroll('e1', eDevice, [{ template: enrolled, hand: 'right', liveness: 0.95 }]);
    expect(ok.error).toBeUndefined();
    userId = (ok.result as { user_id: string }).user_id;
    e.close();
  }, 120_000);

  afterAll(async () => {
    if (process.env.RELIABILITY_FIGURES) console.log(`ATTESTATION ${JSON.stringify(figures)}`);
    await server?.stop();
    tmp.remove();
  });

  it('a stored or intercepted template never authenticates on POST /api/v1/auth; a fresh attested capture does', async () => {
    const stranger = new TestDevice(hostKiosk.pvs_id); // right device id, key never registered
    const attempts: { name: string; body: unknown }[] = [];
    for (let i = 0; i < 10; i++) {
      attempts.push({ name: 'bare', body: { template: enrolled, hand: 'right', liveness: 0.99 } });
      attempts.push({ name: 'forged key', body: stranger.direct({ template: enrolled, hand: 'right' }) });
      // a genuine signature of another capture, with the stored template swapped in
      const other = host.direct({ template: palm(), hand: 'right' });
      attempts.push({ name: 'swapped template', body: { ...other, template: enrolled } });
      // a genuine capture of this palm, but made long ago (stored by a thief)
      attempts.push({
        name: 'stale',
        body: host.direct({ template: enrolled, hand: 'right' }, Date.now() - 5 * 60_000),
      });
      // liveness left out: it is mandatory and signed
      const signed = host.direct({ template: enrolled, hand: 'right' });
      const { liveness: _dropped, ...noLiveness } = signed;
      attempts.push({ name: 'liveness missing', body: noLiveness });
    }
    let authenticated = 0;
    const reasons = new Set<string>();
    for (const a of attempts) {
      const r = await direct(shop.api_key, a.body);
      expect(r.status, a.name).toBe(200);
      expect(r.body.data.status, a.name).toBe('failed');
      expect(r.body.data.auth_result, a.name).toMatchObject({ success: false, user_id: null });
      reasons.add(r.body.data.auth_result.reason!);
      if (r.body.data.auth_result.success) authenticated++;
    }
    expect([...reasons]).toEqual(['attestation_failed']);

    // the real thing works, once: sending the same intercepted request again is refused (counter)
    const fresh = host.direct({ template: enrolled, hand: 'right', liveness: 0.97 });
    const okRes = await direct(shop.api_key, fresh);
    expect(okRes.body.data).toMatchObject({
      status: 'completed',
      auth_result: { success: true, user_id: pseudonym(userId, shop.vendor_id) },
    });
    const replayed = await direct(shop.api_key, fresh);
    expect(replayed.body.data.auth_result).toMatchObject({ success: false, reason: 'attestation_failed' });

    // a capture host of another vendor cannot vouch for this vendor's calls, nor this one for theirs
    const other = await admin<Vendor>('vendor', 'create', '--name', 'Other Shop');
    const crossed = await direct(other.api_key, host.direct({ template: enrolled, hand: 'right' }));
    expect(crossed.body.data.auth_result).toMatchObject({ success: false, reason: 'attestation_failed' });

    figures.direct_replays = { attempts: attempts.length + 2, authenticated: authenticated };
    expect(authenticated).toBe(0);
    // every refusal is in the audit log, and the chain still verifies
    expect(
      await run('server/src/cli/admin.ts', ['audit', 'verify'], {
        DATABASE_URL: env.DATABASE_URL,
        PALMID_KEY_FILE: env.PALMID_KEY_FILE,
      }),
    ).toMatch(/intact/);
  }, 120_000);

  it('40 stranger palms, then the right one: locked out per device and per API key, never identified', async () => {
    const v = await admin<Vendor>('vendor', 'create', '--name', 'Brute Force Ltd');
    const k1 = await admin<Kiosk>('pvs', 'create', '--name', 'brute host 1', '--vendor', v.vendor_id);
    const k2 = await admin<Kiosk>('pvs', 'create', '--name', 'brute host 2', '--vendor', v.vendor_id);
    const d1 = await bindDevice(server.base, k1);
    const d2 = await bindDevice(server.base, k2);
    const outcomes: string[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await direct(v.api_key, d1.direct({ template: palm(), hand: 'right' }));
      outcomes.push(
        r.status === 200
          ? r.body.data.auth_result.reason!
          : `${r.status}:${String(r.body.error?.details.reason)}`,
      );
    }
    expect(outcomes.slice(0, 5)).toEqual(Array(5).fill('no_match'));
    expect(new Set(outcomes.slice(5))).toEqual(new Set(['429:capture_locked']));
    const right = await direct(v.api_key, d1.direct({ template: enrolled, hand: 'right' }));
    expect(right.status).toBe(429);
    expect(right.body.error).toMatchObject({ code: 'RATE_LIMITED', details: { reason: 'capture_locked' } });
    // the same API key through another capture host is locked too (per key) ...
    const viaOtherHost = await direct(v.api_key, d2.direct({ template: enrolled, hand: 'right' }));
    expect(viaOtherHost.status).toBe(429);
    expect(viaOtherHost.body.error?.details).toMatchObject({ locked: 'api_key' });
    // ... and the locked host with a fresh key of the vendor (per device)
    const rotated = await admin<{ api_key: string }>('vendor', 'rotate-key', v.vendor_id);
    const newKey = await direct(rotated.api_key, d1.direct({ template: enrolled, hand: 'right' }));
    expect(newKey.status).toBe(429);
    expect(newKey.body.error?.details).toMatchObject({ locked: 'device' });
    figures.direct_lockout = {
      strangers: 40,
      no_match_before_lock: outcomes.filter((o) => o === 'no_match').length,
      right_palm_identified_while_locked: 0,
    };
  }, 120_000);

  it('at a kiosk: replayed nonce, non-increasing counter, stale capture, changed liveness → attestation_failed; a valid capture completes', async () => {
    const v = await admin<Vendor>('vendor', 'create', '--name', 'Kiosk Vendor');
    const kiosk = await admin<Kiosk>('pvs', 'create', '--name', 'till', '--vendor', v.vendor_id);
    const k = await kioskSocket(kiosk);
    const device = new TestDevice(kiosk.pvs_id);
    // a wrong provisioning secret binds nothing
    const wrong = await k.hello('w', device, { provisioning_secret: `prov_${'A'.repeat(43)}` });
    expect(wrong.error).toMatchObject({
      code: 'FORBIDDEN',
      details: { reason: 'provisioning_secret_invalid' },
    });
    const hello = await k.hello('h', device, { provisioning_secret: kiosk.provisioning_secret });
    expect(hello.result).toMatchObject({ device_key: 'bound' });
    const context = async () => {
      const r = await api<{ data: { auth_id: string } }>(server.base, 'POST', '/api/v1/auth/create', {
        key: v.api_key,
        body: { auth_context: { type: 'login', pvs_id: kiosk.pvs_id } },
      });
      const authId = r.body.data.auth_id;
      return { authId, nonce: await k.nonceFor(authId) };
    };
    const sample = { template: enrolled, hand: 'right' as const, quality: 0.9, liveness: 0.9 };
    const identify = async (id: string, authId: string, attestation: unknown, s: object = sample) => {
      const r = await k.call(id, 'identify', { auth_id: authId, ...s, attestation });
      expect(r.error, id).toBeUndefined();
      return r.result as { success: boolean; reason?: string };
    };

    const first = await context();
    expect(
      await identify('ok', first.authId, device.attest('identify', first.authId, first.nonce, sample)),
    ).toMatchObject({
      success: true,
    });
    const cases: Record<string, () => Promise<{ success: boolean; reason?: string }>> = {
      'replayed nonce': async () => {
        const c = await context();
        return identify('n', c.authId, device.attest('identify', c.authId, first.nonce, sample));
      },
      'counter not increasing': async () => {
        const c = await context();
        device.counter -= 2; // the next signature reuses an accepted counter
        return identify('c', c.authId, device.attest('identify', c.authId, c.nonce, sample));
      },
      'stale captured_at': async () => {
        const c = await context();
        device.counter += 10;
        return identify(
          's',
          c.authId,
          device.attest('identify', c.authId, c.nonce, sample, Date.now() - 90_000),
        );
      },
      'liveness changed after signing': async () => {
        const c = await context();
        const att = device.attest('identify', c.authId, c.nonce, { ...sample, liveness: 0.2 });
        return identify('l', c.authId, att, sample);
      },
      'no attestation': async () => identify('none', (await context()).authId, undefined),
    };
    for (const [name, attempt] of Object.entries(cases))
      expect(await attempt(), name).toMatchObject({ success: false, reason: 'attestation_failed' });
    // and after all that, a valid capture still completes
    const last = await context();
    expect(
      await identify('ok2', last.authId, device.attest('identify', last.authId, last.nonce, sample)),
    ).toMatchObject({
      success: true,
    });
    figures.kiosk_refusals = Object.keys(cases);
    k.close();

    // rekey: the old key is dropped, a new one binds with the new secret
    const rekeyed = await admin<{ provisioning_secret: string }>('pvs', 'rekey', kiosk.pvs_id);
    const k2 = await kioskSocket(kiosk);
    const replacement = new TestDevice(kiosk.pvs_id);
    const rebound = await k2.hello('h', replacement, { provisioning_secret: rekeyed.provisioning_secret });
    expect(rebound.result).toMatchObject({ device_key: 'bound' });
    const c = await context2(k2, v, kiosk);
    const old = await k2.call('old', 'identify', {
      auth_id: c.authId,
      ...sample,
      attestation: device.attest('identify', c.authId, c.nonce, sample),
    });
    expect((old.result as { reason: string }).reason).toBe('attestation_failed');
    k2.close();
  }, 120_000);

  it('agent register, attest and doctor: the integrator flow as processes', async () => {
    const v = await admin<Vendor>('vendor', 'create', '--name', 'Integrator');
    const k = await admin<Kiosk>('pvs', 'create', '--name', 'integrator host', '--vendor', v.vendor_id);
    const agentEnv = {
      PALMID_AGENT_CONFIG: join(tmp.dir, 'integrator.json'),
      PALMID_SERVER_URL: server.base,
      PALMID_PVS_ID: k.pvs_id,
      PALMID_DEVICE_TOKEN: k.device_token,
      PALMID_PROVISIONING_SECRET: k.provisioning_secret,
    };
    const reg = await cli('agent/src/cli/main.ts', ['register', '--json'], agentEnv);
    expect(reg.code, reg.stderr).toBe(0);
    expect(JSON.parse(reg.stdout)).toMatchObject({ pvs_id: k.pvs_id, device_key: 'bound' });
    const keyFile = join(tmp.dir, 'integrator.device-key.pem');
    const templateFile = join(tmp.dir, 'capture.b64');
    writeFileSync(templateFile, enrolled);
    const signed = await cli(
      'agent/src/cli/main.ts',
      ['attest', '--template', templateFile, '--hand', 'right', '--liveness', '0.96', '--quality', '0.9'],
      agentEnv,
    );
    expect(signed.code, signed.stderr).toBe(0);
    const res = await direct(v.api_key, JSON.parse(signed.stdout));
    expect(res.body.data).toMatchObject({ status: 'completed', auth_result: { success: true } });
    const missing = await cli('agent/src/cli/main.ts', ['attest', '--template', templateFile], agentEnv);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--liveness/);
    // a palm for the vendor's user management is signed for registration (purpose 4): it registers a user
    // through mpc/users/create and authenticates no one on /api/v1/auth
    const newPalm = join(tmp.dir, 'register.b64');
    writeFileSync(newPalm, palm());
    const forRegister = await cli(
      'agent/src/cli/main.ts',
      ['attest', '--for', 'register', '--template', newPalm, '--hand', 'right', '--liveness', '0.95'],
      agentEnv,
    );
    expect(forRegister.code, forRegister.stderr).toBe(0);
    const registerPalm = JSON.parse(forRegister.stdout) as Record<string, unknown>;
    const asAuth = await direct(v.api_key, registerPalm);
    expect(asAuth.body.data.auth_result).toMatchObject({ success: false, reason: 'attestation_failed' });
    const created = await api(server.base, 'POST', '/api/v1/mpc/users/create', {
      key: v.api_key,
      body: { palms: [registerPalm] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const again = await api<{ error: { details: Record<string, unknown> } }>(
      server.base,
      'POST',
      '/api/v1/mpc/users/create',
      { key: v.api_key, body: { palms: [registerPalm] } },
    );
    expect(again.status).toBe(403);
    expect(again.body.error.details).toMatchObject({ field: 'palms', reason: 'attestation_failed' });

    const doctor = async () => {
      const r = await cli('agent/src/cli/main.ts', ['doctor', '--json', '--device', 'sim'], agentEnv);
      const report = JSON.parse(r.stdout) as { checks: { name: string; status: string; detail: string }[] };
      return report.checks.find((c) => c.name === 'device key')!;
    };
    expect(await doctor()).toMatchObject({ status: 'ok', detail: expect.stringMatching(/registered/) });
    chmodSync(keyFile, 0o644);
    expect(await doctor()).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/readable by others/),
    });
    chmodSync(keyFile, 0o600);
    await admin('pvs', 'rekey', k.pvs_id);
    expect(await doctor()).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/no key registered/),
    });
  }, 180_000);

  /** A context for `kiosk` whose scan.request reaches socket `k`. */
  async function context2(k: FrameClient, v: Vendor, kiosk: Kiosk) {
    const r = await api<{ data: { auth_id: string } }>(server.base, 'POST', '/api/v1/auth/create', {
      key: v.api_key,
      body: { auth_context: { type: 'login', pvs_id: kiosk.pvs_id } },
    });
    const authId = r.body.data.auth_id;
    return { authId, nonce: await k.nonceFor(authId) };
  }
});
