import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../config.ts';
import { createTestApp, seedUser, type TestApp } from '../../testing.ts';

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
  const post = (body: unknown) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/attributes/import',
      headers: { authorization: `Bearer ${user.token}` },
      payload: body as object,
    });

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
    const token = await idToken({
      nonce: 'n-1',
      birthdate: '1990-05-17',
      verified_claims: {
        verification: { trust_framework: 'eidas' },
        claims: { given_name: 'Ada', family_name: 'Lovelace', birthdate: '1990-05-17' },
      },
    });
    const res = await post({ id_token: token, nonce: 'n-1' });
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
    const cases: [Promise<string>, string | undefined, string][] = [
      [idToken({ iss: 'https://evil.example' }), undefined, 'wrong_issuer'],
      [idToken({ aud: 'someone-else' }), undefined, 'wrong_audience'],
      [idToken({}, otherKey), undefined, 'bad_signature'],
      [idToken({ iat: nowS - 7200, exp: nowS - 3600 }), undefined, 'expired'],
      [idToken({ nonce: 'n-1' }), 'n-2', 'nonce_mismatch'],
    ];
    for (const [token, nonce, reason] of cases) {
      const res = await post({ id_token: await token, ...(nonce ? { nonce } : {}) });
      expect(res.statusCode, reason).toBe(400);
      expect(res.json().error.details).toMatchObject({ field: 'id_token', reason });
    }
    expect((await post({ id_token: 'not-a-jwt' })).json().error.details.reason).toBe('malformed');
    expect((await post({})).statusCode).toBe(400);
    const anon = await t.app.inject({
      method: 'POST',
      url: '/v1/attributes/import',
      payload: { id_token: 'x' },
    });
    expect(anon.statusCode).toBe(401);
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
