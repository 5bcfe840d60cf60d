import { errorBodySchema } from '@palmid/contracts/envelope';
import { attestPalms, createTestApp, provisionDevice, type TestApp } from '@palmid/server/dev/testing';
import { RATE_LIMITS, RateLimits } from '@palmid/server/lib/rate-limits';
import { createPvs } from '@palmid/server/modules/pvs/service';
import { createVendor } from '@palmid/server/modules/vendors/service';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

/**
 * OWASP API Security Top 10 (2023) for every route that takes an object id: API1 broken object-level
 * authorization (another vendor, another user), API2 broken authentication (live key in sandbox, erased
 * user, wrong kind of credential), API3 property-level authorization (read-only attributes, unknown
 * fields, only consented attributes disclosed), API5 function-level authorization (scope-less key, user
 * token on vendor routes). Every refusal must be the documented status with an error envelope.
 */
interface Attempt {
  who: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  key?: string;
  token?: string;
  body?: unknown;
  expect: number;
}

const refusals: { attempted: number; refused: number } = { attempted: 0, refused: 0 };

describe('access control (OWASP API Top 10 2023)', () => {
  let t: TestApp;
  const template = Buffer.from('palm-of-user-a-0123456789').toString('base64');
  let vendorA: { vendor_id: string; api_key: string };
  let vendorB: { vendor_id: string; api_key: string };
  let noScope: { api_key: string };
  let authOnly: { api_key: string };
  let live: { api_key: string };
  let userA: { user_id: string; user_token: string; ledger_id: string };
  let userB: { user_id: string; user_token: string };
  let erased: { user_id: string; user_token: string };
  let ctxA: string;
  let consentA: string;
  let kioskA: string;

  const inject = (a: Omit<Attempt, 'expect' | 'who'>) =>
    t.app.inject({
      method: a.method,
      url: a.url,
      headers: {
        ...(a.key ? { 'x-api-key': a.key } : {}),
        ...(a.token ? { authorization: `Bearer ${a.token}` } : {}),
        ...(a.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(a.body !== undefined ? { payload: JSON.stringify(a.body) } : {}),
    });

  const refused = async (attempts: Attempt[]) => {
    for (const a of attempts) {
      const res = await inject(a);
      refusals.attempted += 1;
      expect(res.statusCode, `${a.who}: ${a.method} ${a.url} → ${res.body}`).toBe(a.expect);
      expect(errorBodySchema.safeParse(res.json()).success).toBe(true);
      // a refusal never carries the object's data
      expect(res.body).not.toContain(userA.ledger_id);
      refusals.refused += 1;
    }
  };

  beforeAll(async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' });
    // Hundreds of deliberately bad credentials come from one address here; the per-IP budget for
    // failures has its own suite (credential-guard.test.ts), so lift it to test every refusal's answer.
    t.ctx.rateLimits = new RateLimits(undefined, {
      ...RATE_LIMITS,
      credentials: [{ points: 1e9, duration: 60 }],
    });
    const db = t.ctx.database.db;
    vendorA = await createVendor(db, { name: 'Vendor A', url: 'https://a.example' });
    vendorB = await createVendor(db, { name: 'Vendor B', url: 'https://b.example' });
    noScope = await createVendor(db, { name: 'No Scope', scopes: [] });
    authOnly = await createVendor(db, { name: 'Auth Only', scopes: ['auth'] });
    live = await createVendor(db, { name: 'Live Vendor', mode: 'live' });
    const kiosk = await createPvs(db, { name: 'A kiosk', vendorId: vendorA.vendor_id });
    kioskA = kiosk.pvs_id;
    const device = await provisionDevice(t.ctx, kiosk);
    const mk = async (palm?: string) => {
      const res = await inject({
        method: 'POST',
        url: '/api/v1/mpc/users/create',
        key: vendorA.api_key,
        body: {
          attributes: { email: 'a@example.com', phone: '+4915112345678' },
          ...(palm ? { palms: attestPalms(device, [{ hand: 'right' as const, template: palm }]) } : {}),
        },
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().data as { user_id: string; user_token: string; ledger_id: string };
    };
    userA = await mk(template);
    userB = await mk();
    erased = await mk();
    expect(
      (await inject({ method: 'DELETE', url: '/v1/gdpr/delete-me', token: erased.user_token })).statusCode,
    ).toBe(200);
    const consent = await inject({
      method: 'POST',
      url: '/v1/consents',
      token: userA.user_token,
      body: {
        vendor_id: vendorA.vendor_id,
        attributes: [{ name: 'email', purpose: 'receipts', retention_days: 0 }],
      },
    });
    expect(consent.statusCode, consent.body).toBe(201);
    consentA = consent.json().data.consent_id;
    const resolved = await inject({
      method: 'POST',
      url: '/api/v1/auth',
      key: vendorA.api_key,
      body: {
        auth_context: { type: 'login', attributes_optional: ['email'] },
        palm: device.direct({ template, hand: 'right', liveness: 0.99 }),
      },
    });
    expect(resolved.statusCode, resolved.body).toBe(200);
    expect(resolved.json().data.auth_result.success, resolved.body).toBe(true);
    const created = await inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      key: vendorA.api_key,
      body: { auth_context: { type: 'login' } },
    });
    ctxA = created.json().data.auth_id;
  });
  afterAll(async () => {
    await t?.close();
    if (process.env.RELIABILITY_FIGURES) console.log(`ACCESS_CONTROL ${JSON.stringify(refusals)}`);
  });

  it('controls: the owner is served', async () => {
    expect(
      (await inject({ method: 'GET', url: `/api/v1/auth/${ctxA}/status`, key: vendorA.api_key })).statusCode,
    ).toBe(200);
    const from = Math.floor(Date.now() / 1000) - 600;
    expect(
      (
        await inject({
          method: 'GET',
          url: `/api/v1/ledger/transactions/${userA.ledger_id}?from=${from}`,
          key: vendorA.api_key,
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (
        await inject({
          method: 'POST',
          url: '/api/v1/mpc/users/read',
          key: vendorA.api_key,
          body: { user_id: userA.user_id },
        })
      ).statusCode,
    ).toBe(200);
  });

  it('API1 BOLA: another vendor cannot reach vendor A’s contexts, ledger, users or kiosks', async () => {
    const from = Math.floor(Date.now() / 1000) - 600;
    const k = vendorB.api_key;
    await refused([
      { who: 'vendor B', method: 'GET', url: `/api/v1/auth/${ctxA}/status`, key: k, expect: 404 },
      { who: 'vendor B', method: 'POST', url: `/api/v1/auth/${ctxA}/cancel`, key: k, expect: 404 },
      {
        who: 'vendor B',
        method: 'GET',
        url: `/api/v1/ledger/transactions/${userA.ledger_id}?from=${from}`,
        key: k,
        expect: 404,
      },
      {
        who: 'vendor B',
        method: 'POST',
        url: '/api/v1/mpc/users/read',
        key: k,
        body: { user_id: userA.user_id },
        // an id issued to vendor A means nothing to vendor B: the same 404 as an unknown id
        expect: 404,
      },
      {
        who: 'vendor B',
        method: 'POST',
        url: '/api/v1/mpc/users/update',
        key: k,
        body: { user_id: userA.user_id, attributes: { phone: '+4915100000000' } },
        // an id issued to vendor A means nothing to vendor B: the same 404 as an unknown id
        expect: 404,
      },
      {
        who: 'vendor B',
        method: 'POST',
        url: '/api/v1/mpc/users/delete',
        key: k,
        body: { user_id: userA.user_id },
        // an id issued to vendor A means nothing to vendor B: the same 404 as an unknown id
        expect: 404,
      },
      {
        who: 'vendor B',
        method: 'POST',
        url: '/api/v1/auth/create',
        key: k,
        body: { auth_context: { type: 'login', pvs_id: kioskA } },
        expect: 403,
      },
    ]);
    // the context is untouched and user A still exists
    expect(
      (await inject({ method: 'GET', url: `/api/v1/auth/${ctxA}/status`, key: vendorA.api_key })).json().data
        .status,
    ).toBe('pending');
  });

  it('API1 BOLA: another user cannot revoke user A’s consent', async () => {
    await refused([
      {
        who: 'user B',
        method: 'DELETE',
        url: `/v1/consents/${consentA}`,
        token: userB.user_token,
        expect: 404,
      },
    ]);
    const list = await inject({ method: 'GET', url: '/v1/consents', token: userA.user_token });
    expect(list.json().data.consents.map((c: { consent_id: string }) => c.consent_id)).toContain(consentA);
  });

  it('API2 broken authentication: live key in sandbox, erased user, garbage and swapped credentials', async () => {
    const from = Math.floor(Date.now() / 1000) - 600;
    const attempts: Attempt[] = [];
    for (const [who, key] of [
      ['live key in sandbox', live.api_key],
      ['no key', undefined],
      ['garbage key', 'sk_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
      ['user token as key', userA.user_token],
    ] as const) {
      attempts.push(
        { who, method: 'GET', url: `/api/v1/auth/${ctxA}/status`, ...(key ? { key } : {}), expect: 401 },
        { who, method: 'POST', url: `/api/v1/auth/${ctxA}/cancel`, ...(key ? { key } : {}), expect: 401 },
        {
          who,
          method: 'GET',
          url: `/api/v1/ledger/transactions/${userA.ledger_id}?from=${from}`,
          ...(key ? { key } : {}),
          expect: 401,
        },
        {
          who,
          method: 'POST',
          url: '/api/v1/mpc/users/read',
          ...(key ? { key } : {}),
          body: { user_id: userA.user_id },
          expect: 401,
        },
      );
    }
    for (const [who, token] of [
      ['erased user', erased.user_token],
      ['vendor key as token', vendorA.api_key],
      ['garbage token', 'ut_garbage'],
    ] as const) {
      attempts.push(
        { who, method: 'DELETE', url: `/v1/consents/${consentA}`, token, expect: 401 },
        { who, method: 'GET', url: '/v1/attributes/email', token, expect: 401 },
        {
          who,
          method: 'PUT',
          url: '/v1/attributes/email',
          token,
          body: { value: 'x@example.com' },
          expect: 401,
        },
        { who, method: 'GET', url: '/v1/gdpr/export?format=json', token, expect: 401 },
        { who, method: 'GET', url: '/v1/audit', token, expect: 401 },
      );
    }
    await refused(attempts);
    // the erased user's data is gone for its creator too
    expect(
      (
        await inject({
          method: 'POST',
          url: '/api/v1/mpc/users/read',
          key: vendorA.api_key,
          body: { user_id: erased.user_id },
        })
      ).statusCode,
    ).toBe(404);
  });

  it('API5 function-level: a key without the scope is refused on every route of that scope', async () => {
    const from = Math.floor(Date.now() / 1000) - 600;
    await refused([
      {
        who: 'scope-less',
        method: 'GET',
        url: `/api/v1/auth/${ctxA}/status`,
        key: noScope.api_key,
        expect: 403,
      },
      {
        who: 'scope-less',
        method: 'POST',
        url: `/api/v1/auth/${ctxA}/cancel`,
        key: noScope.api_key,
        expect: 403,
      },
      {
        who: 'scope-less',
        method: 'POST',
        url: '/api/v1/auth/create',
        key: noScope.api_key,
        body: { auth_context: { type: 'login' } },
        expect: 403,
      },
      {
        who: 'scope-less',
        method: 'GET',
        url: `/api/v1/ledger/transactions/${userA.ledger_id}?from=${from}`,
        key: noScope.api_key,
        expect: 403,
      },
      { who: 'scope-less', method: 'GET', url: '/api/v1/status', key: noScope.api_key, expect: 403 },
      {
        who: 'scope-less',
        method: 'POST',
        url: '/api/v1/mpc/users/read',
        key: noScope.api_key,
        body: { user_id: userA.user_id },
        expect: 403,
      },
      {
        who: 'auth-only',
        method: 'POST',
        url: '/api/v1/mpc/users/read',
        key: authOnly.api_key,
        body: { user_id: userA.user_id },
        expect: 403,
      },
      {
        who: 'auth-only',
        method: 'POST',
        url: '/api/v1/mpc/users/create',
        key: authOnly.api_key,
        body: {},
        expect: 403,
      },
      {
        who: 'auth-only',
        method: 'POST',
        url: '/api/v1/mpc/users/delete',
        key: authOnly.api_key,
        body: { user_id: userA.user_id },
        expect: 403,
      },
    ]);
  });

  it('API3 property level: read-only attributes, unknown fields and undisclosed attributes', async () => {
    await refused([
      {
        who: 'user',
        method: 'PUT',
        url: '/v1/attributes/age_verified',
        token: userA.user_token,
        body: { value: true },
        expect: 403,
      },
      {
        who: 'user',
        method: 'PUT',
        url: '/v1/attributes/user_id',
        token: userA.user_token,
        body: { value: 'x' },
        expect: 403,
      },
      {
        who: 'user',
        method: 'PUT',
        url: '/v1/attributes/is_adult',
        token: userA.user_token,
        body: { value: true },
        expect: 403,
      },
      {
        who: 'user',
        method: 'PUT',
        url: '/v1/attributes/email',
        token: userA.user_token,
        body: { value: 'a@example.com', user_id: userB.user_id },
        expect: 400,
      },
      {
        who: 'vendor A',
        method: 'POST',
        url: '/api/v1/mpc/users/update',
        key: vendorA.api_key,
        body: { user_id: userA.user_id, attributes: { registration_date: '2000-01-01' } },
        expect: 403,
      },
      {
        who: 'vendor A',
        method: 'POST',
        url: '/api/v1/auth/create',
        key: vendorA.api_key,
        body: { auth_context: { type: 'login' }, vendor_id: vendorB.vendor_id },
        expect: 400,
      },
      {
        who: 'vendor A',
        method: 'POST',
        url: '/api/v1/auth/create',
        key: vendorA.api_key,
        body: { auth_context: { type: 'login', status: 'completed' } },
        expect: 400,
      },
      {
        who: 'user',
        method: 'POST',
        url: '/v1/consents',
        token: userA.user_token,
        body: {
          vendor_id: vendorB.vendor_id,
          user_id: userB.user_id,
          attributes: [{ name: 'email', purpose: 'x', retention_days: 0 }],
        },
        expect: 400,
      },
    ]);
    // vendor A created user A with phone, but the user consented to email only: read discloses email only
    const read = await inject({
      method: 'POST',
      url: '/api/v1/mpc/users/read',
      key: vendorA.api_key,
      body: { user_id: userA.user_id },
    });
    expect(read.json().data.attributes).toEqual({ email: 'a@example.com' });
  });

  it('excessive attribute requests: more than 16 attributes or a duplicate per context is refused', async () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => `attr_${i}`);
    await refused([
      {
        who: 'vendor A',
        method: 'POST',
        url: '/api/v1/auth/create',
        key: vendorA.api_key,
        body: { auth_context: { type: 'login', attributes_optional: names(17) } },
        expect: 400,
      },
      {
        who: 'vendor A',
        method: 'POST',
        url: '/api/v1/auth/create',
        key: vendorA.api_key,
        body: {
          auth_context: {
            type: 'login',
            attributes_required: names(9),
            attributes_optional: names(17).slice(9),
          },
        },
        expect: 400,
      },
      {
        who: 'vendor A',
        method: 'POST',
        url: '/api/v1/auth/create',
        key: vendorA.api_key,
        body: {
          auth_context: { type: 'login', attributes_required: ['email'], attributes_optional: ['email'] },
        },
        expect: 400,
      },
      {
        who: 'vendor A',
        method: 'POST',
        url: '/api/v1/auth',
        key: vendorA.api_key,
        body: {
          auth_context: { type: 'login', attributes_optional: names(17) },
          palm: { template, hand: 'right' },
        },
        expect: 400,
      },
    ]);
    const ok = await inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      key: vendorA.api_key,
      body: { auth_context: { type: 'login', attributes_optional: names(16) } },
    });
    expect(ok.statusCode).toBe(201);
  });

  it('WebSocket: another vendor cannot subscribe to vendor A’s context; a scope-less key is closed', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const base = address.replace(/^http/, 'ws');
    const ws = new WebSocket(`${base}/ws/vendor`, { headers: { 'x-api-key': vendorB.api_key } });
    await new Promise((r) => ws.once('open', r));
    const answer = new Promise<{ error?: { code: string } }>((r) =>
      ws.once('message', (d) => r(JSON.parse(d.toString()))),
    );
    ws.send(JSON.stringify({ id: 's1', method: 'subscribe', params: { auth_id: ctxA } }));
    expect((await answer).error?.code).toBe('NOT_FOUND');
    ws.close();
    refusals.attempted += 1;
    refusals.refused += 1;
    for (const key of [noScope.api_key, live.api_key, userA.user_token]) {
      const bad = new WebSocket(`${base}/ws/vendor`, { headers: { 'x-api-key': key } });
      const code = await new Promise<number>((r) => bad.once('close', (c) => r(c)));
      expect(code).toBe(1008);
      refusals.attempted += 1;
      refusals.refused += 1;
    }
  });
});
