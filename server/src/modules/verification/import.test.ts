import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, type TestApp } from '../../../dev/testing.ts';
import { ConfigError, loadConfig } from '../../config.ts';

/** `POST /v1/attributes/import` with issuers from PALMID_OIDC_ISSUERS and a JWKS file (no network). */
const ISSUER = 'https://idp.example.test';
const CLIENT = 'palmid-client';
const clock = Date.parse('2026-06-01T12:00:00Z');
const nowS = Math.floor(clock / 1000);

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

describe('identity-provider import', () => {
  let t: TestApp;
  let dir: string;
  let signingKey: PrivateKey;
  let otherKey: PrivateKey;
  let user: { userId: string; token: string };

  const idToken = (claims: JWTPayload = {}, key: PrivateKey = signingKey) =>
    new SignJWT({ email: 'Ada@Example.com', email_verified: true, name: 'Ada L', ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer((claims.iss as string | undefined) ?? ISSUER)
      .setAudience((claims.aud as string | undefined) ?? CLIENT)
      .setSubject('idp-user-42')
      .setIssuedAt((claims.iat as number | undefined) ?? nowS - 10)
      .setExpirationTime((claims.exp as number | undefined) ?? nowS + 3600)
      .sign(key);
  const post = (body: unknown, token = user.token) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/attributes/import',
      headers: { authorization: `Bearer ${token}` },
      payload: body as object,
    });
  const serverNonce = async (token = user.token): Promise<string> => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/attributes/import/nonce',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data.nonce as string;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'palmid-oidc-'));
    const main = await generateKeyPair('RS256', { extractable: true });
    signingKey = main.privateKey;
    ({ privateKey: otherKey } = await generateKeyPair('RS256'));
    const jwksFile = join(dir, 'jwks.json');
    writeFileSync(
      jwksFile,
      JSON.stringify({
        keys: [{ ...(await exportJWK(main.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }],
      }),
    );
    t = await createTestApp(
      { PALMID_OIDC_ISSUERS: JSON.stringify([{ issuer: ISSUER, audience: CLIENT, jwks: jwksFile }]) },
      () => clock,
    );
    user = await seedUser(t.ctx);
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('imports mapped claims; verified kinds and user kinds carry the issuer', async () => {
    const nonce = await serverNonce();
    const token = await idToken({
      nonce,
      birthdate: '1990-05-17',
      verified_claims: {
        verification: { trust_framework: 'eidas' },
        claims: { given_name: 'Ada', family_name: 'Lovelace', birthdate: '1990-05-17' },
      },
    });
    const res = await post({ id_token: token, nonce });
    expect(res.statusCode, res.body).toBe(200);
    const data = res.json().data;
    expect(data.issuer).toBe(ISSUER);
    const byName = Object.fromEntries(
      (data.attributes as { name: string }[]).map((a) => [a.name, a]),
    ) as Record<string, Record<string, unknown>>;
    expect(byName.email).toMatchObject({ kind: 'user', value: 'ada@example.com', verified_by: ISSUER });
    expect(byName.email_verified).toMatchObject({ kind: 'verified', value: true, verified_by: ISSUER });
    expect(byName.date_of_birth).toMatchObject({ kind: 'user', value: '1990-05-17' });
    expect(byName.identity_verified).toMatchObject({ kind: 'verified', value: true });
    const list = (
      await t.app.inject({
        method: 'GET',
        url: '/v1/attributes',
        headers: { authorization: `Bearer ${user.token}` },
      })
    ).json().data.attributes as { name: string; verified_by?: string }[];
    expect(list.find((a) => a.name === 'legal_name')?.verified_by).toBe(ISSUER);
    expect(list.find((a) => a.name === 'email')?.verified_by).toBe(ISSUER);
    // The user may correct a user-kind value; it then no longer claims the issuer.
    const put = await t.app.inject({
      method: 'PUT',
      url: '/v1/attributes/email',
      headers: { authorization: `Bearer ${user.token}` },
      payload: { value: 'ada@other.example' },
    });
    expect(put.statusCode).toBe(200);
    const email = (
      await t.app.inject({
        method: 'GET',
        url: '/v1/attributes/email',
        headers: { authorization: `Bearer ${user.token}` },
      })
    ).json().data;
    expect(email.verified_by).toBeUndefined();
  });

  it('refuses wrong issuer, audience, signature, expiry and nonce with the reason', async () => {
    const nonce = await serverNonce();
    const cases: [Promise<string>, string][] = [
      [idToken({ nonce, iss: 'https://evil.example' }), 'wrong_issuer'],
      [idToken({ nonce, aud: 'someone-else' }), 'wrong_audience'],
      [idToken({ nonce }, otherKey), 'bad_signature'],
      [idToken({ nonce, iat: nowS - 7200, exp: nowS - 3600 }), 'expired'],
      [idToken({ nonce: 'n-1' }), 'nonce_mismatch'],
      [idToken({}), 'nonce_mismatch'],
    ];
    for (const [token, reason] of cases) {
      const res = await post({ id_token: await token, nonce });
      expect(res.statusCode, reason).toBe(400);
      expect(res.json().error.details).toMatchObject({ field: 'id_token', reason });
    }
    expect((await post({ id_token: 'not-a-jwt', nonce })).json().error.details.reason).toBe('malformed');
    expect((await post({})).statusCode).toBe(400);
    // a nonce is required
    const noNonce = await post({ id_token: await idToken({}) });
    expect(noNonce.statusCode).toBe(400);
    expect(noNonce.json().error.details.field).toBe('nonce');
    const anon = await t.app.inject({
      method: 'POST',
      url: '/v1/attributes/import',
      payload: { id_token: 'x' },
    });
    expect(anon.statusCode).toBe(401);
  });

  it("a nonce is single-use and the issuing user's; one IdP subject binds to one user (403 for another)", async () => {
    const other = await seedUser(t.ctx);
    // a nonce the server never issued, or issued to another user, is refused
    const invented = await post({ id_token: await idToken({ nonce: 'made-up' }), nonce: 'made-up' });
    expect(invented.statusCode).toBe(400);
    expect(invented.json().error.details).toMatchObject({ field: 'nonce', reason: 'unknown_nonce' });
    const othersNonce = await serverNonce(other.token);
    const stolen = await post({ id_token: await idToken({ nonce: othersNonce }), nonce: othersNonce });
    expect(stolen.json().error.details).toMatchObject({ field: 'nonce', reason: 'unknown_nonce' });

    // the same subject (idp-user-42, bound to `user` by the first test) cannot be imported by another user
    const theirs = await serverNonce(other.token);
    const taken = await post({ id_token: await idToken({ nonce: theirs }), nonce: theirs }, other.token);
    expect(taken.statusCode).toBe(403);
    expect(taken.json().error.details).toMatchObject({ reason: 'subject_bound' });

    // the bound user may import again, once per nonce
    const mine = await serverNonce();
    const token = await idToken({ nonce: mine });
    expect((await post({ id_token: token, nonce: mine })).statusCode).toBe(200);
    const replay = await post({ id_token: token, nonce: mine });
    expect(replay.statusCode).toBe(400);
    expect(replay.json().error.details.reason).toBe('unknown_nonce');

    // erasure unlinks the account: afterwards another user may import it
    const erased = await t.app.inject({
      method: 'DELETE',
      url: '/v1/gdpr/delete-me',
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect(erased.statusCode).toBe(200);
    const after = await serverNonce(other.token);
    expect(
      (await post({ id_token: await idToken({ nonce: after }), nonce: after }, other.token)).statusCode,
    ).toBe(200);
  });

  it('bad PALMID_OIDC_ISSUERS stops start-up with one line naming the key', () => {
    const bad = ['not json', '[{"issuer":"nope","audience":"a","jwks":"/x"}]', '[{"issuer":"https://a"}]'];
    for (const value of bad) {
      expect(() => loadConfig({ PALMID_OIDC_ISSUERS: value })).toThrow(ConfigError);
      try {
        loadConfig({ PALMID_OIDC_ISSUERS: value });
      } catch (err) {
        expect((err as ConfigError).key).toBe('PALMID_OIDC_ISSUERS');
        expect((err as Error).message).not.toContain('\n');
      }
    }
    expect(loadConfig({}).PALMID_OIDC_ISSUERS).toEqual([]);
  });
});
