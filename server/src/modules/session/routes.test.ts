import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, type TestApp } from '../../../dev/testing.ts';
import { expectError } from '../../../dev/user-api-testkit.ts';
import { createClaimCode } from '../users/service.ts';

describe('POST /v1/session', () => {
  let t: TestApp;
  let clock = Date.now();
  let ip = 0;
  /** Each test speaks from its own address: the limit counts per client IP. */
  const post = (payload: unknown, remoteAddress = `10.0.0.${ip}`) =>
    t.app.inject({ method: 'POST', url: '/v1/session', payload: payload as object, remoteAddress });

  beforeAll(async () => {
    t = await createTestApp({}, () => clock);
  });
  afterAll(() => t.close());

  it('redeems a claim code once for a working user token', async () => {
    ip += 1;
    const u = await seedUser(t.ctx);
    const { claim_code } = await createClaimCode(t.ctx, t.ctx.database.db, u.userId);
    const res = await post({ claim_code });
    expect(res.statusCode).toBe(200);
    const data = res.json().data;
    expect(data).toEqual({
      user_id: u.userId,
      user_token: expect.stringMatching(/^ut_[A-Za-z0-9_-]{43}$/),
      expires_at: expect.any(String),
    });
    expect(Date.parse(data.expires_at)).toBeGreaterThan(clock + 29 * 86_400_000);
    const me = await t.app.inject({
      method: 'GET',
      url: '/v1/attributes/user_id',
      headers: { authorization: `Bearer ${data.user_token}` },
    });
    expect(me.json().data.value).toBe(u.userId);
    expectError(await post({ claim_code }), 401, 'UNAUTHORIZED', 'claim_code', 'invalid');
  });

  it('accepts the code in any case and without the dash', async () => {
    ip += 1;
    const u = await seedUser(t.ctx);
    const { claim_code } = await createClaimCode(t.ctx, t.ctx.database.db, u.userId);
    const res = await post({ claim_code: claim_code.replace('-', '').toLowerCase() });
    expect(res.statusCode).toBe(200);
  });

  it('an unknown or expired code is 401', async () => {
    ip += 1;
    expectError(await post({ claim_code: 'ZZZZZ-ZZZZZ' }), 401, 'UNAUTHORIZED', 'claim_code');
    const u = await seedUser(t.ctx);
    const { claim_code } = await createClaimCode(t.ctx, t.ctx.database.db, u.userId);
    const start = clock;
    clock = start + 16 * 60_000;
    try {
      expectError(await post({ claim_code }), 401, 'UNAUTHORIZED', 'claim_code');
    } finally {
      clock = start;
    }
  });

  it.each([
    ['a missing code', {}, 'claim_code'],
    ['a number', { claim_code: 12345 }, 'claim_code'],
    ['an empty code', { claim_code: '' }, 'claim_code'],
    ['an oversize code', { claim_code: 'A'.repeat(33) }, 'claim_code'],
    ['an unknown field', { claim_code: 'ABCDE-FGHJK', user_id: 'x' }, 'user_id'],
  ])('rejects %s with 400', async (_label, payload, field) => {
    ip += 1;
    expectError(await post(payload), 400, 'INVALID_REQUEST', field);
  });

  it('rejects malformed JSON', async () => {
    ip += 1;
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/session',
      payload: '{"claim_code":',
      headers: { 'content-type': 'application/json' },
      remoteAddress: `10.0.0.${ip}`,
    });
    expectError(res, 400, 'INVALID_REQUEST', 'body', 'malformed_json');
  });

  it('is limited to 10 attempts per minute per IP, with rate-limit headers', async () => {
    const addr = '10.9.9.9';
    let res = await post({ claim_code: 'AAAAA-AAAAA' }, addr);
    expect(res.headers['x-ratelimit-limit']).toBe('10');
    expect(res.headers['x-ratelimit-remaining']).toBe('9');
    for (let i = 0; i < 10; i++) res = await post({ claim_code: 'AAAAA-AAAAA' }, addr);
    expectError(res, 429, 'RATE_LIMITED');
    expect(res.headers['retry-after']).toBeTruthy();
    // Another address is unaffected.
    expect((await post({ claim_code: 'AAAAA-AAAAA' }, '10.9.9.10')).statusCode).toBe(401);
  });

  it('the user API appears in the OpenAPI document', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    const paths = Object.keys(res.json().paths);
    for (const p of [
      '/v1/session',
      '/v1/attributes',
      '/v1/attributes/{name}',
      '/v1/consents',
      '/v1/consents/{consent_id}',
      '/v1/audit',
      '/v1/gdpr/export',
      '/v1/gdpr/delete-me',
    ]) {
      expect(paths).toContain(p);
    }
  });
});
