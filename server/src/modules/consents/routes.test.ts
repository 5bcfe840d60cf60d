import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, seedVendor, type TestApp } from '../../../dev/testing.ts';
import { type Call, expectError, userCaller } from '../../../dev/user-api-testkit.ts';
import { issueUserToken } from '../users/service.ts';

const DAY = 86_400_000;

describe('consent API', () => {
  let t: TestApp;
  let call: Call;
  let clock = Date.now();
  let user: { userId: string; token: string };
  let vendorId: string;
  const grant = (payload: unknown, token?: string) =>
    call({ method: 'POST', url: '/v1/consents', payload: payload as object, ...(token ? { token } : {}) });
  const emailConsent = () => ({
    vendor_id: vendorId,
    attributes: [{ name: 'email', purpose: 'receipts', retention_days: 30 }],
  });

  beforeAll(async () => {
    t = await createTestApp({}, () => clock);
    call = userCaller(t, () => user.token);
    user = await seedUser(t.ctx);
    vendorId = (await seedVendor(t.ctx, 'Consent Shop')).vendor_id;
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    user.token = (await issueUserToken(t.ctx, t.ctx.database.db, user.userId)).user_token;
  });

  it('POST grants a consent (201) with the documented fields (docs/user-api.md) and documented defaults', async () => {
    const res = await grant({
      vendor_id: vendorId,
      attributes: [
        { name: 'email', purpose: 'receipts', retention_days: 30 },
        { name: 'is_adult', purpose: 'age check', retention_days: 0 },
      ],
    });
    expect(res.statusCode).toBe(201);
    const c = res.json().data;
    expect(c).toEqual({
      consent_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      user_id: user.userId,
      vendor_id: vendorId,
      attributes: [
        { name: 'email', purpose: 'receipts', retention_days: 30 },
        { name: 'is_adult', purpose: 'age check', retention_days: 0 },
      ],
      granted_at: new Date(clock).toISOString(),
      expires_at: new Date(clock + 365 * DAY).toISOString(),
      revocable: true,
      audit_log: true,
      status: 'active',
      revoked_at: null,
    });
  });

  it('honours expires_at and revocable', async () => {
    const expires = new Date(clock + 10 * DAY).toISOString();
    const res = await grant({ ...emailConsent(), expires_at: expires, revocable: false });
    expect(res.statusCode).toBe(201);
    expect(res.json().data).toMatchObject({ expires_at: expires, revocable: false });
  });

  it('an unknown vendor is 404', async () => {
    const res = await grant({ ...emailConsent(), vendor_id: crypto.randomUUID() });
    expectError(res, 404, 'NOT_FOUND', 'vendor_id', 'unknown');
  });

  it.each([
    ['vendor_id not a UUID', { vendor_id: 'shop' }, 'vendor_id'],
    ['no attributes', { attributes: [] }, 'attributes'],
    [
      'a bad attribute name',
      { attributes: [{ name: 'E-mail', purpose: 'x', retention_days: 1 }] },
      'attributes.0.name',
    ],
    [
      'a blank purpose',
      { attributes: [{ name: 'email', purpose: '  ', retention_days: 1 }] },
      'attributes.0.purpose',
    ],
    [
      'a negative retention',
      { attributes: [{ name: 'email', purpose: 'x', retention_days: -1 }] },
      'attributes.0.retention_days',
    ],
    [
      'a fractional retention',
      { attributes: [{ name: 'email', purpose: 'x', retention_days: 1.5 }] },
      'attributes.0.retention_days',
    ],
    [
      'an unknown attribute field',
      { attributes: [{ name: 'email', purpose: 'x', retention_days: 1, share: true }] },
      'attributes.0.share',
    ],
    [
      'a duplicate attribute',
      {
        attributes: [
          { name: 'email', purpose: 'x', retention_days: 1 },
          { name: 'email', purpose: 'y', retention_days: 2 },
        ],
      },
      'attributes.1.name',
    ],
    ['a past expiry', { expires_at: '2001-01-01T00:00:00Z' }, 'expires_at'],
    [
      'an expiry beyond 730 days',
      { expires_at: new Date(Date.now() + 800 * DAY).toISOString() },
      'expires_at',
    ],
    ['an expiry that is not a timestamp', { expires_at: 'next year' }, 'expires_at'],
    ['revocable not a boolean', { revocable: 'no' }, 'revocable'],
    ['audit_log (not settable: always true)', { audit_log: false }, 'audit_log'],
    ['an unknown field', { scope: 'all' }, 'scope'],
  ])('POST with %s is 400 and grants nothing', async (_label, patch, field) => {
    const before = (await call({ method: 'GET', url: '/v1/consents?all=true' })).json().data.consents.length;
    const res = await grant({ ...emailConsent(), ...patch });
    expectError(res, 400, 'INVALID_REQUEST', field);
    const after = (await call({ method: 'GET', url: '/v1/consents?all=true' })).json().data.consents.length;
    expect(after).toBe(before);
  });

  it('rejects malformed JSON and a missing token', async () => {
    const res = await call({
      method: 'POST',
      url: '/v1/consents',
      payload: '{',
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 400, 'INVALID_REQUEST', 'body', 'malformed_json');
    expectError(await call({ method: 'GET', url: '/v1/consents', token: null }), 401, 'UNAUTHORIZED');
    expectError(
      await call({ method: 'POST', url: '/v1/consents', token: null, payload: emailConsent() }),
      401,
      'UNAUTHORIZED',
    );
  });

  it('GET lists active consents; all=true adds revoked and expired ones', async () => {
    const u = await seedUser(t.ctx);
    const active = (await grant(emailConsent(), u.token)).json().data;
    const toRevoke = (await grant(emailConsent(), u.token)).json().data;
    const shortLived = (
      await grant({ ...emailConsent(), expires_at: new Date(clock + DAY).toISOString() }, u.token)
    ).json().data;
    const revoked = await call({
      method: 'DELETE',
      url: `/v1/consents/${toRevoke.consent_id}`,
      token: u.token,
    });
    expect(revoked.statusCode).toBe(200);
    const start = clock;
    clock = start + 2 * DAY;
    try {
      const list = (await call({ method: 'GET', url: '/v1/consents', token: u.token })).json().data.consents;
      expect(list.map((c: { consent_id: string }) => c.consent_id)).toEqual([active.consent_id]);
      const all = (await call({ method: 'GET', url: '/v1/consents?all=true', token: u.token })).json().data
        .consents as { consent_id: string; status: string; revoked_at: string | null }[];
      const byId = Object.fromEntries(all.map((c) => [c.consent_id, c]));
      expect(all).toHaveLength(3);
      expect(byId[active.consent_id]).toMatchObject({ status: 'active', revoked_at: null });
      expect(byId[toRevoke.consent_id]).toMatchObject({
        status: 'revoked',
        revoked_at: new Date(start).toISOString(),
      });
      expect(byId[shortLived.consent_id]).toMatchObject({ status: 'expired', revoked_at: null });
      const explicitFalse = await call({ method: 'GET', url: '/v1/consents?all=false', token: u.token });
      expect(explicitFalse.json().data.consents).toHaveLength(1);
    } finally {
      clock = start;
    }
  });

  it('GET rejects bad query parameters', async () => {
    expectError(await call({ method: 'GET', url: '/v1/consents?all=yes' }), 400, 'INVALID_REQUEST', 'all');
    expectError(await call({ method: 'GET', url: '/v1/consents?page=2' }), 400, 'INVALID_REQUEST');
  });

  it('DELETE revokes; again returns the first revocation; non-revocable is 403', async () => {
    const c = (await grant(emailConsent())).json().data;
    const res = await call({ method: 'DELETE', url: `/v1/consents/${c.consent_id}` });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({ consent_id: c.consent_id, revoked_at: new Date(clock).toISOString() });
    clock += 1000;
    const again = await call({ method: 'DELETE', url: `/v1/consents/${c.consent_id}` });
    expect(again.json().data.revoked_at).toBe(res.json().data.revoked_at);

    const fixed = (await grant({ ...emailConsent(), revocable: false })).json().data;
    expectError(
      await call({ method: 'DELETE', url: `/v1/consents/${fixed.consent_id}` }),
      403,
      'FORBIDDEN',
      'consent_id',
      'not_revocable',
    );
    const still = (await call({ method: 'GET', url: '/v1/consents' })).json().data.consents;
    expect(still.map((x: { consent_id: string }) => x.consent_id)).toContain(fixed.consent_id);
  });

  it("another user's consent is 404, a malformed id 400", async () => {
    const c = (await grant(emailConsent())).json().data;
    const other = await seedUser(t.ctx);
    expectError(
      await call({ method: 'DELETE', url: `/v1/consents/${c.consent_id}`, token: other.token }),
      404,
      'NOT_FOUND',
      'consent_id',
    );
    expectError(
      await call({ method: 'DELETE', url: `/v1/consents/${crypto.randomUUID()}` }),
      404,
      'NOT_FOUND',
    );
    expectError(
      await call({ method: 'DELETE', url: '/v1/consents/abc' }),
      400,
      'INVALID_REQUEST',
      'consent_id',
    );
    const otherList = (
      await call({ method: 'GET', url: '/v1/consents?all=true', token: other.token })
    ).json();
    expect(otherList.data.consents).toEqual([]);
  });
});
