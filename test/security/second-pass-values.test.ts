import { statSync } from 'node:fs';
import { join } from 'node:path';
import { FrameClient, TestDevice } from '@palmid/server/dev/testing';
import SQLite from 'better-sqlite3';
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, bindDevice, cli, lastJson, type ServerProc, startServer, tempDir } from '../e2e/harness.ts';
import { randomTemplate } from '../support/templates.ts';
import { Recorder } from './sockets.ts';
import { createUserWithPalm, userApi } from './users.ts';

/**
 * The second review's low findings (docs/security.md, "Second pass"), each tried as the attacker tried it,
 * against a real server process over HTTP and WebSocket on its own SQLite files: values that outlive a
 * consent or `retention_days: 0`, a kiosk told identifiers, a verified flag without its value, a forged
 * `<attr>_proof`, a lockout reset by refused captures, a flood of kiosk requests and nonces, world-readable
 * database files, a prototype name and a deeply nested body, cacheable personal answers, and a JWKS fetched
 * over plain HTTP.
 */
const ISSUER = 'https://idp.example.test';
const CLIENT = 'palmid-client';

type Kiosk = { pvs_id: string; device_token: string; provisioning_secret: string };
type Failure = { error?: { code?: string; details?: { field?: string; reason?: string } } };
type Result = {
  success: boolean;
  user_id: string | null;
  reason?: string;
  attributes: Record<string, unknown>;
  attributes_removed?: string[];
};
type StatusData = { data: { auth_id: string; status: string; auth_result?: Result } };

describe('second-pass trust boundaries (real server process)', () => {
  const tmp = tempDir('palmid-second-pass-');
  // a data directory the server creates itself (its mode is the server's doing)
  const dataDir = join(tmp.dir, 'data');
  const env = { DATABASE_URL: `sqlite:${dataDir}/p.db`, PALMID_KEY_FILE: `${dataDir}/master.key` };
  const admin = (...args: string[]) => cli('server/src/cli/admin.ts', args, env);
  let server: ServerProc;
  let wsBase: string;
  let vendor: { vendor_id: string; api_key: string };
  let host: TestDevice;
  let signingKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  const sockets: { close(): void }[] = [];

  const newKiosk = async (name: string) =>
    lastJson<Kiosk>(
      (await admin('--json', 'pvs', 'create', '--name', name, '--vendor', vendor.vendor_id)).stdout,
    );
  /** a kiosk of the vendor whose key is bound, its socket open and said hello */
  const openKiosk = async (name: string) => {
    const kiosk = await newKiosk(name);
    const device = new TestDevice(kiosk.pvs_id);
    const k = await FrameClient.open(`${wsBase}/ws/pvs`, { authorization: `Bearer ${kiosk.device_token}` });
    sockets.push(k);
    const hello = await k.hello('h', device, { provisioning_secret: kiosk.provisioning_secret });
    expect(hello.result, JSON.stringify(hello)).toMatchObject({ device_key: 'bound' });
    return { kiosk, device, k };
  };
  const newUser = (attributes: Record<string, unknown> = {}) =>
    createUserWithPalm(server.base, vendor, host, attributes);
  const asUser = userApi(() => server.base);
  const consent = async (token: string, attributes: { name: string; retention_days: number }[]) => {
    const res = await asUser<{ data: { consent_id: string } }>(token, 'POST', '/v1/consents', {
      vendor_id: vendor.vendor_id,
      attributes: attributes.map((a) => ({ ...a, purpose: 'receipts' })),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data.consent_id;
  };
  const direct = async (template: string, context: Record<string, unknown>) => {
    const res = await api<{ data: { auth_id: string; status: string; auth_result: Result } }>(
      server.base,
      'POST',
      '/api/v1/auth',
      {
        key: vendor.api_key,
        body: { auth_context: context, palm: host.direct({ template, hand: 'right', liveness: 0.99 }) },
      },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  };
  const status = async (authId: string) => {
    const res = await api<StatusData>(server.base, 'GET', `/api/v1/auth/${authId}/status`, {
      key: vendor.api_key,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  };
  const subscribe = async (authId: string) => {
    const s = await Recorder.open(`${wsBase}/ws/vendor`, { 'x-api-key': vendor.api_key });
    try {
      const r = await s.call('s', 'subscribe', { auth_id: authId });
      return r.result as StatusData['data'];
    } finally {
      s.ws.close();
    }
  };
  const createContext = async (auth_context: Record<string, unknown>) => {
    const res = await api<{ data: { auth_id: string } }>(server.base, 'POST', '/api/v1/auth/create', {
      key: vendor.api_key,
      body: { auth_context },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data.auth_id;
  };

  beforeAll(async () => {
    const idp = await generateKeyPair('RS256', { extractable: true });
    signingKey = idp.privateKey;
    const jwks = { keys: [{ ...(await exportJWK(idp.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] };
    vendor = lastJson((await admin('--json', 'vendor', 'create', '--name', 'Second Pass')).stdout);
    server = await startServer({
      ...env,
      PORT: '0',
      PALMID_ENV: 'sandbox',
      // many users made through one capture host
      PALMID_ENROL_PER_MIN: '1000',
      PALMID_OIDC_ISSUERS: JSON.stringify([{ issuer: ISSUER, audience: CLIENT, jwks }]),
    });
    wsBase = server.base.replace(/^http/, 'ws');
    host = await bindDevice(server.base, await newKiosk('capture host'));
  }, 120_000);
  afterAll(async () => {
    for (const s of sockets) s.close();
    await server?.stop();
    tmp.remove();
  });

  describe('5. disclosed values do not linger', () => {
    it('after the consent is revoked, status and subscribe show the names only', async () => {
      const ada = await newUser({ email: 'ada@example.com', phone: '+4915112345678' });
      const consentId = await consent(ada.user_token, [{ name: 'email', retention_days: 30 }]);
      const done = await direct(ada.template, { type: 'login', attributes_required: ['email'] });
      expect(done.auth_result.attributes).toEqual({ email: 'ada@example.com' });
      expect((await status(done.auth_id)).auth_result?.attributes).toEqual({ email: 'ada@example.com' });

      const revoked = await asUser(ada.user_token, 'DELETE', `/v1/consents/${consentId}`);
      expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
      const after = await status(done.auth_id);
      expect(after.auth_result).toMatchObject({
        success: true,
        attributes: {},
        attributes_removed: ['email'],
      });
      const live = await subscribe(done.auth_id);
      expect(live.auth_result).toMatchObject({ attributes: {}, attributes_removed: ['email'] });
      expect(JSON.stringify([after, live])).not.toContain('ada@example.com');
    });

    it('revoking one consent leaves the values another consent still covers', async () => {
      const bea = await newUser({ email: 'bea@example.com', country: 'DE' });
      const emailConsent = await consent(bea.user_token, [{ name: 'email', retention_days: 30 }]);
      await consent(bea.user_token, [{ name: 'country', retention_days: 30 }]);
      const done = await direct(bea.template, { type: 'login', attributes_required: ['email', 'country'] });
      expect(done.auth_result.attributes).toEqual({ email: 'bea@example.com', country: 'DE' });
      expect((await asUser(bea.user_token, 'DELETE', `/v1/consents/${emailConsent}`)).status).toBe(200);
      expect((await status(done.auth_id)).auth_result).toMatchObject({
        attributes: { country: 'DE' },
        attributes_removed: ['email'],
      });
    });

    it('retention_days 0: the value reaches the vendor once, then the stored result keeps its name only', async () => {
      const cy = await newUser({ email: 'cy@example.com' });
      await consent(cy.user_token, [{ name: 'email', retention_days: 0 }]);
      // the direct answer delivers it: nothing is kept behind it
      const done = await direct(cy.template, { type: 'login', attributes_required: ['email'] });
      expect(done.auth_result.attributes).toEqual({ email: 'cy@example.com' });
      expect((await status(done.auth_id)).auth_result).toMatchObject({
        attributes: {},
        attributes_removed: ['email'],
      });

      // at a kiosk: the vendor's first read delivers it, the next one finds the name only
      const { kiosk, device, k } = await openKiosk('retention till');
      const authId = await createContext({
        type: 'login',
        attributes_required: ['email'],
        pvs_id: kiosk.pvs_id,
      });
      const idf = await k.identify('i', device, { auth_id: authId, template: cy.template, liveness: 0.99 });
      expect(idf.result, JSON.stringify(idf)).toEqual({ status: 'completed', success: true });
      expect((await status(authId)).auth_result?.attributes).toEqual({ email: 'cy@example.com' });
      // the drop is written right after the answer: the next read a moment later
      let second = await status(authId);
      for (let i = 0; i < 20 && second.auth_result?.attributes.email !== undefined; i++) {
        await new Promise((r) => setTimeout(r, 50));
        second = await status(authId);
      }
      expect(second.auth_result).toMatchObject({ attributes: {}, attributes_removed: ['email'] });
      expect((await subscribe(authId)).auth_result?.attributes).toEqual({});
    });
  });

  it('6. a kiosk is told {status, success, reason} only, fresh or replayed: no attribute, no identifier', async () => {
    const dan = await newUser({ phone: '+4915187654321' });
    await consent(dan.user_token, [{ name: 'phone', retention_days: 30 }]);
    const { kiosk, device, k } = await openKiosk('till 6');
    const authId = await createContext({
      type: 'payment',
      amount: 700,
      attributes_required: ['phone'],
      pvs_id: kiosk.pvs_id,
    });
    const frame = await k.identifyFrame(device, { auth_id: authId, template: dan.template, liveness: 0.99 });
    const first = await k.call('pay-6', 'identify', frame);
    expect(first.result).toEqual({ status: 'completed', success: true });
    const replayed = await k.call('pay-6', 'identify', frame);
    expect(replayed.result).toEqual({ status: 'completed', success: true });
    // the vendor has them through its own API
    const told = (await status(authId)).auth_result!;
    expect(told.attributes.phone).toBe('+4915187654321');
    for (const answer of [first, replayed]) {
      expect(JSON.stringify(answer)).not.toContain('+4915187654321');
      expect(JSON.stringify(answer)).not.toContain(told.user_id!);
    }
    // and a failure says why, nothing more
    const miss = await createContext({ type: 'login', pvs_id: kiosk.pvs_id });
    const missed = await k.identify('miss-6', device, { auth_id: miss, template: randomTemplate() });
    expect(missed.result).toEqual({ status: 'failed', success: false, reason: 'no_match' });
  });

  describe('8. a verified flag is imported only with the value it vouches for', () => {
    const nowS = () => Math.floor(Date.now() / 1000);
    const idToken = (claims: JWTPayload, sub: string) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(ISSUER)
        .setAudience(CLIENT)
        .setSubject(sub)
        .setIssuedAt(nowS() - 10)
        .setExpirationTime(nowS() + 600)
        .sign(signingKey);
    const importClaims = async (token: string, claims: JWTPayload, sub: string) => {
      const n = await asUser<{ data: { nonce: string } }>(token, 'POST', '/v1/attributes/import/nonce');
      const nonce = n.body.data.nonce;
      return asUser<Failure & { data: { attributes: { name: string }[]; skipped: string[] } }>(
        token,
        'POST',
        '/v1/attributes/import',
        { id_token: await idToken({ ...claims, nonce }, sub), nonce },
      );
    };

    it('email_verified without an email claim does not land beside a self-typed e-mail', async () => {
      const eve = await newUser();
      expect(
        (await asUser(eve.user_token, 'PUT', '/v1/attributes/email', { value: 'boss@victim.example' }))
          .status,
      ).toBe(200);
      const res = await importClaims(eve.user_token, { email_verified: true, name: 'Eve' }, 'idp-eve');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.attributes.map((a) => a.name)).not.toContain('email_verified');
      expect(res.body.data.skipped).toContain('email_verified');
      expect((await asUser(eve.user_token, 'GET', '/v1/attributes/email_verified')).status).toBe(404);
    });

    it('identity_verified only from verified_claims that carry the values', async () => {
      const fay = await newUser();
      const empty = await importClaims(
        fay.user_token,
        {
          verified_claims: { verification: { trust_framework: 'eidas' }, claims: {} },
          birthdate: '1990-01-01',
        },
        'idp-fay',
      );
      expect(empty.status, JSON.stringify(empty.body)).toBe(200);
      expect(empty.body.data.attributes.map((a) => a.name)).not.toContain('identity_verified');
      expect((await asUser(fay.user_token, 'GET', '/v1/attributes/identity_verified')).status).toBe(404);

      const gus = await newUser();
      const full = await importClaims(
        gus.user_token,
        {
          verified_claims: {
            verification: { trust_framework: 'eidas' },
            claims: { given_name: 'Gus', family_name: 'Gray', birthdate: '1985-05-05' },
          },
        },
        'idp-gus',
      );
      expect(full.status, JSON.stringify(full.body)).toBe(200);
      expect(full.body.data.attributes.map((a) => a.name)).toEqual(
        expect.arrayContaining(['legal_name', 'date_of_birth', 'identity_verified']),
      );
    });
  });

  it('9. <attr>_proof names are reserved: a user cannot plant country_proof', async () => {
    const hal = await newUser();
    for (const name of ['country_proof', 'membership_status_proof']) {
      const res = await asUser(hal.user_token, 'PUT', `/v1/attributes/${name}`, { value: 'forged' });
      expect(res.status, name).toBe(403);
      expect(res.body.error?.details?.reason, name).toBe('reserved_name');
    }
  });

  it('10. refused captures between misses do not reset the failed-match lockout', async () => {
    const { kiosk, device, k } = await openKiosk('lockout till');
    const outcome = async (id: string, attested: boolean) => {
      const authId = await createContext({ type: 'login', pvs_id: kiosk.pvs_id });
      const sample = {
        auth_id: authId,
        template: randomTemplate(),
        hand: 'right' as const,
        quality: 0.9,
        liveness: 0.99,
      };
      const nonce = await k.nonceFor(authId);
      const r = attested
        ? await k.call(id, 'identify', {
            ...sample,
            attestation: device.attest('identify', authId, nonce, sample),
          })
        : await k.call(id, 'identify', sample);
      return r.error
        ? String((r.error as { details?: { reason?: string } }).details?.reason)
        : String(
            // (the answer's older shape nested it in auth_result)
            (r.result as { reason?: string; auth_result?: { reason?: string } }).reason ??
              (r.result as { auth_result?: { reason?: string } }).auth_result?.reason,
          );
    };
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) seen.push(await outcome(`m${i}`, true));
    seen.push(await outcome('unsigned', false));
    seen.push(await outcome('m4', true));
    seen.push(await outcome('m5', true));
    expect(seen).toEqual([
      'no_match',
      'no_match',
      'no_match',
      'no_match',
      'attestation_failed',
      'no_match',
      'kiosk_locked',
    ]);
  });

  describe('11. kiosk requests are bounded', () => {
    it('a kiosk holds at most 5 open enrolment nonces', async () => {
      const { kiosk, k } = await openKiosk('nonce till');
      const answers = [];
      for (let i = 0; i < 8; i++) answers.push(await k.call(`b${i}`, 'enroll.begin', {}));
      expect(answers.slice(0, 5).every((a) => a.result !== undefined)).toBe(true);
      for (const a of answers.slice(5))
        expect(a.error).toMatchObject({ code: 'RATE_LIMITED', details: { reason: 'too_many_open_nonces' } });
      const db = new SQLite(`${dataDir}/p.db`, { readonly: true, fileMustExist: true });
      try {
        const row = db
          .prepare('select count(*) as n from capture_nonces where pvs_id = ?')
          .get(kiosk.pvs_id) as {
          n: number;
        };
        expect(row.n).toBe(5);
      } finally {
        db.close();
      }
    });

    it('a kiosk is served at most 600 requests a minute', async () => {
      const { k } = await openKiosk('chatty till');
      const answers = await Promise.all(
        Array.from({ length: 620 }, (_, i) => k.call(`hb${i}`, 'heartbeat', {})),
      );
      const limited = answers.filter(
        (a) => (a.error as { code?: string } | undefined)?.code === 'RATE_LIMITED',
      );
      // the hello counted too
      expect(answers.length - limited.length).toBe(599);
      expect(limited[0]!.error).toMatchObject({ details: { reason: 'rate_limited' } });
    });
  });

  it('12. the data directory is 0700; the database, its WAL and SHM, the key and the audit anchor 0600', async () => {
    // a write, so that the WAL and shared-memory files exist
    await newUser();
    const mode = (p: string) => statSync(p).mode & 0o777;
    expect(mode(dataDir).toString(8)).toBe('700');
    for (const f of ['p.db', 'p.db-wal', 'p.db-shm', 'master.key'])
      expect(mode(join(dataDir, f)).toString(8), f).toBe('600');
    const anchor = (await import('node:fs')).readdirSync(dataDir).filter((f) => /anchor/.test(f));
    for (const f of anchor) expect(mode(join(dataDir, f)).toString(8), f).toBe('600');
  });

  describe('13. no lookup through the prototype chain, no stack exhaustion', () => {
    it('PUT /v1/attributes/constructor is a 400, not a 500', async () => {
      const ivy = await newUser();
      const res = await asUser(ivy.user_token, 'PUT', '/v1/attributes/constructor', { value: 'x' });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'name' } });
    });

    it('400 000 nested [ in a 1 MiB body is a 400 too_deep, not a 500 RangeError', async () => {
      const jo = await newUser();
      const n = 400_000;
      const res = await fetch(`${server.base}/v1/attributes/nested`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${jo.user_token}`, 'content-type': 'application/json' },
        body: `{"value":${'['.repeat(n)}${']'.repeat(n)}}`,
      });
      const body = (await res.json()) as Failure;
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(body.error).toMatchObject({
        code: 'INVALID_REQUEST',
        details: { field: 'body', reason: 'too_deep' },
      });
      // an ordinary nested value is still taken
      const ok = await asUser(jo.user_token, 'PUT', '/v1/attributes/nested', {
        value: [[1, [2]], { a: [3] }],
      });
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    });
  });

  it('answers that carry personal data are not cacheable (Cache-Control: no-store)', async () => {
    const kim = await newUser({ email: 'kim@example.com' });
    const userRead = await fetch(`${server.base}/v1/attributes`, {
      headers: { authorization: `Bearer ${kim.user_token}` },
    });
    expect(userRead.headers.get('cache-control')).toBe('no-store');
    const vendorRead = await fetch(`${server.base}/api/v1/mpc/users/read`, {
      method: 'POST',
      headers: { 'x-api-key': vendor.api_key, 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: kim.user_id }),
    });
    expect(vendorRead.status).toBe(200);
    expect(vendorRead.headers.get('cache-control')).toBe('no-store');
    const authId = await createContext({ type: 'login' });
    const statusRead = await fetch(`${server.base}/api/v1/auth/${authId}/status`, {
      headers: { 'x-api-key': vendor.api_key },
    });
    expect(statusRead.headers.get('cache-control')).toBe('no-store');
  });

  it('a JWKS URL over plain http:// stops the server with a line naming PALMID_OIDC_ISSUERS', async () => {
    const dir = tempDir('palmid-jwks-');
    try {
      const res = await cli(
        'server/src/main.ts',
        [],
        {
          DATABASE_URL: `sqlite:${dir.dir}/p.db`,
          PALMID_KEY_FILE: `${dir.dir}/k`,
          PORT: '0',
          PALMID_ENV: 'sandbox',
          PALMID_SIM: '0',
          PALMID_OIDC_ISSUERS: JSON.stringify([
            { issuer: ISSUER, audience: CLIENT, jwks: 'http://idp.example.test/jwks.json' },
          ]),
        },
        20_000,
      );
      const out = `${res.stdout}\n${res.stderr}`;
      expect(res.code).not.toBe(0);
      expect(out).toMatch(/PALMID_OIDC_ISSUERS/);
      expect(out).toMatch(/https:\/\//);
      expect(out).not.toMatch(/listening/);
    } finally {
      dir.remove();
    }
  }, 30_000);
});
