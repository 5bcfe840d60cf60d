import { FrameClient, TestDevice } from '@palmid/server/dev/testing';
import { parseServicePublicKey, releaseZkResources, verifyPredicateProof } from '@palmid/zk';
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, bindDevice, cli, lastJson, type ServerProc, startServer, tempDir } from '../e2e/harness.ts';
import { createUserWithPalm, userApi } from './users.ts';

/**
 * The OIDC, predicate-set, proof-source and erasure rules of docs/security.md ("Trust boundaries"), tried
 * against a real server process over HTTP and WebSocket: one ID token imported into two accounts,
 * `email_verified` surviving an e-mail change, a vendor asking a set the user did not consent to, a
 * self-asserted birth date passed off as verified, and a kiosk answer replayed after `delete-me`.
 */
const ISSUER = 'https://idp.example.test';
const CLIENT = 'palmid-client';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
type Failure = { error?: { details?: { field?: string; reason?: string } } };
type AuthData = {
  data: {
    auth_id: string;
    status: string;
    auth_result: { success: boolean; reason?: string; attributes: Record<string, unknown> };
  };
};

describe('OIDC, predicate, proof-source and erasure rules (real server process)', () => {
  const tmp = tempDir('palmid-trust-rules-');
  const env = { DATABASE_URL: `sqlite:${tmp.dir}/p.db`, PALMID_KEY_FILE: `${tmp.dir}/k` };
  const admin = (...args: string[]) => cli('server/src/cli/admin.ts', args, env);
  let server: ServerProc;
  let vendor: { vendor_id: string; api_key: string };
  /** the vendor's capture host: palms are believed only when attested (docs/vendor-api.md) */
  let host: TestDevice;
  /** the vendor's kiosk, key bound, for the erasure case */
  let kiosk: { pvs_id: string; device_token: string; provisioning_secret: string };
  let signingKey: PrivateKey;

  const newUser = (attributes: Record<string, unknown> = {}) =>
    createUserWithPalm(server.base, vendor, host, attributes);
  const asUser = userApi(() => server.base);
  const entrance = async (template: string, context: Record<string, unknown>) => {
    const res = await api<AuthData>(server.base, 'POST', '/api/v1/auth', {
      key: vendor.api_key,
      body: {
        auth_context: { type: 'entrance', ...context },
        palm: host.direct({ template, hand: 'right', liveness: 0.99 }),
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data;
  };

  beforeAll(async () => {
    const idp = await generateKeyPair('RS256', { extractable: true });
    signingKey = idp.privateKey;
    const jwks = { keys: [{ ...(await exportJWK(idp.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] };
    vendor = lastJson((await admin('--json', 'vendor', 'create', '--name', 'Club T')).stdout);
    server = await startServer({
      ...env,
      PORT: '0',
      PALMID_ENV: 'sandbox',
      PALMID_OIDC_ISSUERS: JSON.stringify([{ issuer: ISSUER, audience: CLIENT, jwks }]),
    });
    const pvs = (name: string) =>
      admin('--json', 'pvs', 'create', '--name', name, '--vendor', vendor.vendor_id).then((r) =>
        lastJson<{ pvs_id: string; device_token: string; provisioning_secret: string }>(r.stdout),
      );
    const [hostPvs, kioskPvs] = await Promise.all([pvs('club host'), pvs('club kiosk')]);
    host = await bindDevice(server.base, hostPvs);
    kiosk = kioskPvs;
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    tmp.remove();
    await releaseZkResources();
  });

  describe('OIDC import', () => {
    const nowS = () => Math.floor(Date.now() / 1000);
    const idToken = (claims: JWTPayload, sub = 'idp-user-42') =>
      new SignJWT({ email: 'ada@example.com', email_verified: true, ...claims })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(ISSUER)
        .setAudience(CLIENT)
        .setSubject(sub)
        .setIssuedAt(nowS() - 10)
        .setExpirationTime(nowS() + 600)
        .sign(signingKey);
    const nonceOf = async (token: string) => {
      const res = await asUser<{ data: { nonce: string } }>(token, 'POST', '/v1/attributes/import/nonce');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data.nonce;
    };
    const importAs = (token: string, body: unknown) =>
      asUser<Failure & { data: { attributes: { name: string; value: unknown }[] } }>(
        token,
        'POST',
        '/v1/attributes/import',
        body,
      );

    it('needs a server nonce, single use; binds (iss, sub) to one user: a second user gets 403 subject_bound', async () => {
      const ada = await newUser();
      const eve = await newUser();

      // a token with no nonce, or one the server never issued, is refused
      const bare = await importAs(ada.user_token, { id_token: await idToken({}) });
      expect(bare.status).toBe(400);
      expect(bare.body.error?.details?.field).toBe('nonce');
      const invented = await importAs(ada.user_token, {
        id_token: await idToken({ nonce: 'made-up' }),
        nonce: 'made-up',
      });
      expect(invented.status).toBe(400);
      expect(invented.body.error?.details).toMatchObject({ field: 'nonce', reason: 'unknown_nonce' });

      const nonce = await nonceOf(ada.user_token);
      const token = await idToken({ nonce });
      const first = await importAs(ada.user_token, { id_token: token, nonce });
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect(first.body.data.attributes.find((a) => a.name === 'email_verified')?.value).toBe(true);
      // the same token and nonce again: the nonce is spent
      const replay = await importAs(ada.user_token, { id_token: token, nonce });
      expect(replay.status).toBe(400);
      expect(replay.body.error?.details?.reason).toBe('unknown_nonce');
      // nor can another account replay it
      const stolen = await importAs(eve.user_token, { id_token: token, nonce });
      expect(stolen.status).toBe(400);
      expect(stolen.body.error?.details?.reason).toBe('unknown_nonce');

      // the same IdP subject with Eve's own fresh nonce: bound to Ada, refused
      const evesNonce = await nonceOf(eve.user_token);
      const taken = await importAs(eve.user_token, {
        id_token: await idToken({ nonce: evesNonce }),
        nonce: evesNonce,
      });
      expect(taken.status).toBe(403);
      expect(taken.body.error?.details?.reason).toBe('subject_bound');
      expect((await asUser(eve.user_token, 'GET', '/v1/attributes/email_verified')).status).toBe(404);
      // Eve's own subject still imports
      const own = await nonceOf(eve.user_token);
      const mine = await importAs(eve.user_token, {
        id_token: await idToken({ nonce: own, email: 'eve@example.com' }, 'idp-user-99'),
        nonce: own,
      });
      expect(mine.status, JSON.stringify(mine.body)).toBe(200);
    });

    it('email_verified falls when the user changes the e-mail it vouches for', async () => {
      const ann = await newUser();
      const nonce = await nonceOf(ann.user_token);
      const imported = await importAs(ann.user_token, {
        id_token: await idToken({ nonce, email: 'ann@example.com' }, 'idp-user-ann'),
        nonce,
      });
      expect(imported.status, JSON.stringify(imported.body)).toBe(200);
      const flag = await asUser(ann.user_token, 'GET', '/v1/attributes/email_verified');
      expect(flag.status).toBe(200);
      expect(flag.body.data.value).toBe(true);
      // writing the same value keeps the flag; another value drops it
      expect(
        (await asUser(ann.user_token, 'PUT', '/v1/attributes/email', { value: 'ann@example.com' })).status,
      ).toBe(200);
      expect((await asUser(ann.user_token, 'GET', '/v1/attributes/email_verified')).status).toBe(200);
      expect(
        (await asUser(ann.user_token, 'PUT', '/v1/attributes/email', { value: 'eve@evil.example' })).status,
      ).toBe(200);
      expect((await asUser(ann.user_token, 'GET', '/v1/attributes/email_verified')).status).toBe(404);
      expect(
        (await asUser(ann.user_token, 'GET', '/v1/attributes/email')).body.data.verified_by,
      ).toBeUndefined();
    });
  });

  it('a consent to country_in_set naming its values admits that set only: any other set is consent_missing', async () => {
    const erin = await newUser({ country: 'DE' });
    const consent = await asUser(erin.user_token, 'POST', '/v1/consents', {
      vendor_id: vendor.vendor_id,
      attributes: [
        { name: 'country_in_set', purpose: 'EU check', retention_days: 0, values: ['DE', 'FR', 'IT'] },
      ],
    });
    expect(consent.status, JSON.stringify(consent.body)).toBe(201);
    const ask = (values: string[]) =>
      entrance(erin.template, {
        predicates: [{ type: 'in_set', attribute: 'country', values, proof: false }],
      });
    const same = await ask(['IT', 'DE', 'FR']);
    expect(same.status).toBe('completed');
    expect(same.auth_result.attributes).toEqual({ country_in_set: true });
    for (const other of [['DE'], ['DE', 'FR'], ['DE', 'AT', 'CH'], ['DE', 'FR', 'IT', 'ES']]) {
      const res = await ask(other);
      expect(res.status, other.join(',')).toBe('failed');
      expect(res.auth_result, other.join(',')).toMatchObject({ success: false, reason: 'consent_missing' });
      expect(res.auth_result.attributes.country_in_set, other.join(',')).toBeUndefined();
    }
  });

  it('minimum_age_source "verified" refuses a self-asserted birth date; the age proof says self_asserted', async () => {
    const dora = await newUser({ date_of_birth: '1990-01-01' });
    const consent = await asUser(dora.user_token, 'POST', '/v1/consents', {
      vendor_id: vendor.vendor_id,
      attributes: [{ name: 'age_over_21', purpose: 'entry', retention_days: 0 }],
    });
    expect(consent.status, JSON.stringify(consent.body)).toBe(201);

    const strict = await entrance(dora.template, { minimum_age: 21, minimum_age_source: 'verified' });
    expect(strict.status).toBe('failed');
    expect(strict.auth_result.reason).toBe('consent_missing');
    expect(strict.auth_result.attributes.age_over_21).toBeUndefined();

    const self = await entrance(dora.template, { minimum_age: 21, attributes_optional: ['age_proof'] });
    expect(self.status, JSON.stringify(self)).toBe('completed');
    expect(self.auth_result.attributes.age_over_21).toBe(true);
    const proof = self.auth_result.attributes.age_proof as { statement: Record<string, unknown> };
    expect(proof.statement).toMatchObject({ auth_id: self.auth_id, source: 'self_asserted' });

    // the source is signed: the proof verifies as issued, and claiming an issuer instead breaks it
    const serviceKey = parseServicePublicKey(
      ((await (await fetch(`${server.base}/api/v1/keys/zk`)).json()) as { data: unknown }).data,
    );
    const expectAt = { serviceKey, authId: self.auth_id, minimumAge: 21, now: new Date() };
    type Proof = Parameters<typeof verifyPredicateProof>[0];
    expect(await verifyPredicateProof(proof as Proof, expectAt)).toMatchObject({ valid: true });
    const forged = { ...proof, statement: { ...proof.statement, source: ISSUER } } as Proof;
    expect(await verifyPredicateProof(forged, expectAt)).toMatchObject({ valid: false });
  }, 60_000);

  it("after delete-me a replayed kiosk identify id no longer returns the user's stored answer", async () => {
    const fay = await newUser();
    const k = await FrameClient.open(`${server.base.replace(/^http/, 'ws')}/ws/pvs`, {
      authorization: `Bearer ${kiosk.device_token}`,
    });
    try {
      const device = new TestDevice(kiosk.pvs_id);
      const hello = await k.hello('h', device, { provisioning_secret: kiosk.provisioning_secret });
      expect(hello.result, JSON.stringify(hello)).toMatchObject({ device_key: 'bound' });
      const created = await api<{ data: { auth_id: string } }>(server.base, 'POST', '/api/v1/auth/create', {
        key: vendor.api_key,
        body: { auth_context: { type: 'payment', amount: 400 } },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const authId = created.body.data.auth_id;
      // one identify frame, sent as is three times: the kiosk's retry after a reconnect
      const frame = await k.identifyFrame(device, {
        auth_id: authId,
        template: fay.template,
        liveness: 0.99,
      });
      const first = await k.call('pay-1', 'identify', frame);
      // the kiosk is told the outcome only (docs/websocket.md)
      expect(first.result, JSON.stringify(first)).toEqual({ status: 'completed', success: true });
      // the vendor's pseudonymous id and ledger id for Fay, read through the vendor API
      const status = await api<{ data: { auth_result: { user_id: string; ledger_id: string } } }>(
        server.base,
        'GET',
        `/api/v1/auth/${authId}/status`,
        { key: vendor.api_key },
      );
      const told = status.body.data.auth_result;
      expect(told.user_id).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(first)).not.toContain(told.user_id);
      expect(JSON.stringify(first)).not.toContain(told.ledger_id);
      // before erasure the replay gets the stored answer
      const replayed = await k.call('pay-1', 'identify', frame);
      expect(replayed.result).toEqual(first.result);

      const erased = await asUser(fay.user_token, 'DELETE', '/v1/gdpr/delete-me');
      expect(erased.status, JSON.stringify(erased.body)).toBe(200);
      const after = await k.call('pay-1', 'identify', frame);
      // nothing stored to replay: the frame is taken as a new attempt on a context already completed
      expect(after.result).toBeUndefined();
      expect(after.error).toMatchObject({ code: 'INVALID_REQUEST', details: { reason: 'not_resolvable' } });
      expect(JSON.stringify(after)).not.toContain(told.user_id);
      expect(JSON.stringify(after)).not.toContain(told.ledger_id);
    } finally {
      k.close();
    }
  });
});
