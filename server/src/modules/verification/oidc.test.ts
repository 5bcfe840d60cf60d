import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JSONWebKeySet, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idTokenError, verifyIdToken, verifyIdTokenFromIssuers } from './oidc.ts';

const ISSUER = 'https://idp.example.test';
const CLIENT = 'palmid-client';
const NOW = new Date('2026-11-23T10:00:00Z');
const nowS = Math.floor(NOW.getTime() / 1000);

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

let signingKey: PrivateKey;
let otherKey: PrivateKey;
let jwks: JSONWebKeySet;

async function idToken(claims: JWTPayload = {}, opts: { key?: PrivateKey; kid?: string; alg?: string } = {}) {
  return new SignJWT({
    nonce: 'n-123',
    email: 'Ada@Example.com',
    email_verified: true,
    name: 'Ada L',
    ...claims,
  })
    .setProtectedHeader({ alg: opts.alg ?? 'ES256', kid: opts.kid ?? 'k1' })
    .setIssuer((claims.iss as string | undefined) ?? ISSUER)
    .setAudience((claims.aud as string | string[] | undefined) ?? CLIENT)
    .setSubject('user-42')
    .setIssuedAt((claims.iat as number | undefined) ?? nowS - 10)
    .setExpirationTime((claims.exp as number | undefined) ?? nowS + 3600)
    .sign(opts.key ?? signingKey);
}

const options = () => ({ issuer: ISSUER, audience: CLIENT, jwks, nonce: 'n-123', now: NOW });

beforeAll(async () => {
  const main = await generateKeyPair('ES256', { extractable: true });
  signingKey = main.privateKey;
  jwks = { keys: [{ ...(await exportJWK(main.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] };
  ({ privateKey: otherKey } = await generateKeyPair('ES256'));
});

describe('OIDC ID-token import', () => {
  it('maps standard claims of a valid token', async () => {
    const token = await idToken({ birthdate: '1990-05-17' });
    expect(await verifyIdToken(token, options())).toEqual({
      ok: true,
      issuer: ISSUER,
      subject: 'user-42',
      attributes: {
        email: 'ada@example.com',
        email_verified: true,
        name: 'Ada L',
        date_of_birth: '1990-05-17',
      },
      skipped: [],
    });
  });

  it('takes legal name, birth date and identity_verified from identity-assured claims', async () => {
    const token = await idToken({
      verified_claims: {
        verification: { trust_framework: 'eidas' },
        claims: { given_name: 'Ada', family_name: 'Lovelace', birthdate: '1985-12-10' },
      },
      birthdate: '0000-12-10',
    });
    const result = await verifyIdToken(token, options());
    expect(result).toMatchObject({
      ok: true,
      attributes: { legal_name: 'Ada Lovelace', date_of_birth: '1985-12-10', identity_verified: true },
    });
  });

  it('skips a birthdate without a year instead of inventing one', async () => {
    const result = await verifyIdToken(await idToken({ birthdate: '0000-05-17' }), options());
    expect(result).toMatchObject({ ok: true, skipped: ['birthdate'] });
    expect(result.ok ? result.attributes.date_of_birth : 'refused').toBeUndefined();
  });

  it.each([
    ['wrong_issuer', { iss: 'https://evil.example.test' }, {}],
    ['wrong_audience', { aud: 'someone-else' }, {}],
    ['expired', { iat: nowS - 7200, exp: nowS - 3600 }, { maxTokenAgeS: 86_400 }],
    ['too_old', { iat: nowS - 3000 }, {}],
    ['not_yet_valid', { iat: nowS + 3600, exp: nowS + 7200 }, {}],
    ['nonce_mismatch', { nonce: 'replayed' }, {}],
  ] as const)('refuses with %s', async (reason, claims, extra) => {
    const result = await verifyIdToken(await idToken(claims as JWTPayload), { ...options(), ...extra });
    expect(result).toMatchObject({ ok: false, reason });
  });

  it('requires azp to be this client when the token has several audiences', async () => {
    const shared = await idToken({ aud: [CLIENT, 'other-client'] });
    expect(await verifyIdToken(shared, options())).toMatchObject({ ok: false, reason: 'wrong_audience' });
    const authorised = await idToken({ aud: [CLIENT, 'other-client'], azp: CLIENT });
    expect(await verifyIdToken(authorised, options())).toMatchObject({ ok: true });
  });

  it('refuses a token without nonce when one was sent', async () => {
    const token = await idToken({ nonce: undefined });
    expect(await verifyIdToken(token, options())).toMatchObject({ ok: false, reason: 'nonce_mismatch' });
  });

  it('refuses a bad signature, an unknown key and a disallowed algorithm', async () => {
    const forged = await idToken({}, { key: otherKey });
    expect(await verifyIdToken(forged, options())).toMatchObject({ ok: false, reason: 'bad_signature' });
    const [h, p] = (await idToken()).split('.');
    const tampered = `${h}.${p}x.${(await idToken()).split('.')[2]}`;
    expect(await verifyIdToken(tampered, options())).toMatchObject({ ok: false });
    const unknown = await idToken({}, { key: otherKey, kid: 'k2' });
    expect(await verifyIdToken(unknown, options())).toMatchObject({ ok: false, reason: 'unknown_key' });
    const hmac = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(CLIENT)
      .setSubject('x')
      .setIssuedAt(nowS)
      .setExpirationTime(nowS + 60)
      .sign(new TextEncoder().encode('a shared secret that is long enough'));
    expect(await verifyIdToken(hmac, options())).toMatchObject({
      ok: false,
      reason: 'unsupported_algorithm',
    });
    expect(await verifyIdToken('not-a-jwt', options())).toMatchObject({ ok: false, reason: 'malformed' });
  });

  it('reads the JWKS from a file and picks the configured issuer', async () => {
    const file = join(tmpdir(), `palmid-jwks-${process.pid}.json`);
    writeFileSync(file, JSON.stringify(jwks));
    const issuers = [
      { issuer: 'https://other.example.test', audience: CLIENT, jwks: { keys: [] } },
      { issuer: ISSUER, audience: [CLIENT, 'second-client'], jwks: file },
    ];
    const token = await idToken();
    expect(await verifyIdTokenFromIssuers(token, issuers, { nonce: 'n-123', now: NOW })).toMatchObject({
      ok: true,
    });
    const stranger = await idToken({ iss: 'https://stranger.example.test' });
    expect(await verifyIdTokenFromIssuers(stranger, issuers, { now: NOW })).toMatchObject({
      ok: false,
      reason: 'wrong_issuer',
    });
  });

  it('maps refusals to a 400 naming the token', () => {
    const err = idTokenError({ ok: false, reason: 'expired', detail: 'x' });
    expect(err.status).toBe(400);
    expect(err.details).toEqual({ field: 'id_token', reason: 'expired' });
  });
});

describe('OIDC with a JWKS URL', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/jwks.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks));
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('fetches the issuer keys and reports an unreachable JWKS as such', async () => {
    const token = await idToken();
    expect(await verifyIdToken(token, { ...options(), jwks: `${url}/jwks.json` })).toMatchObject({
      ok: true,
    });
    expect(await verifyIdToken(token, { ...options(), jwks: new URL(`${url}/missing.json`) })).toMatchObject({
      ok: false,
      reason: 'jwks_unavailable',
    });
  });
});
