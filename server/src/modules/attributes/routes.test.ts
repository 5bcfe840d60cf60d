import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, type TestApp } from '../../../dev/testing.ts';
import { type Call, expectError, userCaller } from '../../../dev/user-api-testkit.ts';
import { appendTransaction } from '../ledger/service.ts';
import { issueUserToken } from '../users/service.ts';

const DAY = 86_400_000;

describe('user attribute API', () => {
  let t: TestApp;
  let clock = Date.now();
  let user: { userId: string; token: string; ledgerId: string };
  let other: { userId: string; token: string };

  let call: Call;
  const put = (name: string, payload: unknown, token?: string) =>
    call({
      method: 'PUT',
      url: `/v1/attributes/${name}`,
      payload: payload as object,
      ...(token ? { token } : {}),
    });
  const get = (name: string, token?: string) =>
    call({ method: 'GET', url: `/v1/attributes/${name}`, ...(token ? { token } : {}) });
  beforeAll(async () => {
    t = await createTestApp({}, () => clock);
    call = userCaller(t, () => user.token);
    user = await seedUser(t.ctx);
    other = await seedUser(t.ctx);
  });
  afterAll(() => t.close());
  // Rate limits count per token: a fresh token per test keeps the tests independent.
  beforeEach(async () => {
    user.token = (await issueUserToken(t.ctx, t.ctx.database.db, user.userId)).user_token;
  });

  it('PUT stores a validated user attribute and GET returns it decrypted', async () => {
    const res = await put('email', { value: 'ana@example.org' });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({
      name: 'email',
      kind: 'user',
      updated_at: new Date(clock).toISOString(),
      valid_from: null,
      valid_until: null,
    });
    const read = await get('email');
    expect(read.statusCode).toBe(200);
    expect(read.json().data).toMatchObject({
      name: 'email',
      kind: 'user',
      value: 'ana@example.org',
      encrypted: false,
      status: 'valid',
    });
  });

  it('stores values encrypted at rest under the user key', async () => {
    await put('phone', { value: '+4915112345678' });
    const row = await t.ctx.database.db
      .selectFrom('attributes')
      .select('value_enc')
      .where('user_id', '=', user.userId)
      .where('name', '=', 'phone')
      .executeTakeFirstOrThrow();
    expect(Buffer.from(row.value_enc).toString('latin1')).not.toContain('4915112345678');
  });

  it('a later PUT corrects the value (rectification)', async () => {
    expect((await put('email', { value: 'ana.new@example.org' })).statusCode).toBe(200);
    expect((await get('email')).json().data.value).toBe('ana.new@example.org');
  });

  it.each([
    ['email', 'not-an-email', 'invalid_email'],
    ['email', 42, 'not_a_string'],
    ['phone', '015112345678', 'invalid_phone'],
    ['phone', '+0123', 'invalid_phone'],
    ['date_of_birth', '1990-02-30', 'invalid_date'],
    ['date_of_birth', '01/02/1990', 'invalid_date'],
    ['date_of_birth', '2999-01-01', 'date_in_future'],
    ['country', 'Germany', 'invalid_country'],
    ['name', '   ', 'empty'],
    ['name', 'a\u0000b', 'control_characters'],
    ['promotion_eligible', 'yes', 'not_a_boolean'],
    ['favourite_colour', null, 'null_value'],
    ['big_blob', 'x'.repeat(5000), 'too_large'],
  ])('PUT %s = %j is refused (%s) and writes nothing', async (name, value, reason) => {
    const before = (await get(name)).json();
    const res = await put(name, { value });
    expectError(res, 400, 'INVALID_REQUEST', 'value', reason);
    expect((await get(name)).json().data).toEqual(before.data);
  });

  it('checks postal codes against the stored country, with a generic fallback', async () => {
    const u = await seedUser(t.ctx);
    expect((await put('postal_code', { value: 'sw1a 1aa' }, u.token)).statusCode).toBe(200);
    expect((await get('postal_code', u.token)).json().data.value).toBe('SW1A 1AA');
    expectError(await put('postal_code', { value: '!' }, u.token), 400, 'INVALID_REQUEST', 'value');
    expect((await put('country', { value: 'de' }, u.token)).statusCode).toBe(200);
    expect((await get('country', u.token)).json().data.value).toBe('DE');
    expectError(await put('postal_code', { value: '1011' }, u.token), 400, 'INVALID_REQUEST', 'value');
    expect((await put('postal_code', { value: '10115' }, u.token)).statusCode).toBe(200);
    await put('country', { value: 'US' }, u.token);
    expectError(await put('postal_code', { value: 'SW1A 1AA' }, u.token), 400, 'INVALID_REQUEST');
    expect((await put('postal_code', { value: '94105-1234' }, u.token)).statusCode).toBe(200);
  });

  it('encrypted: true stores a client-encrypted string without validating it', async () => {
    const res = await put('date_of_birth', { value: 'eyJhbGciOiJkaXIifQ..abc', encrypted: true });
    expect(res.statusCode).toBe(200);
    const item = (await get('date_of_birth')).json().data;
    expect(item).toMatchObject({ value: 'eyJhbGciOiJkaXIifQ..abc', encrypted: true });
    // An opaque birth date cannot feed computed attributes.
    expectError(await get('is_adult'), 404, 'NOT_FOUND');
    expectError(await put('secret', { value: 12, encrypted: true }), 400, 'INVALID_REQUEST', 'value');
    expectError(
      await put('secret', { value: 'x'.repeat(20_000), encrypted: true }),
      400,
      'INVALID_REQUEST',
      'value',
      'too_large',
    );
    await call({ method: 'DELETE', url: '/v1/attributes/date_of_birth' });
  });

  it.each(['user_id', 'registration_date', 'palm_registered', 'last_auth', 'pseudonym'])(
    'system attribute %s is read-only (403)',
    async (name) => {
      expectError(await put(name, { value: 'x' }), 403, 'FORBIDDEN', 'name', 'reserved_name');
      expectError(await call({ method: 'DELETE', url: `/v1/attributes/${name}` }), 403, 'FORBIDDEN');
    },
  );

  it.each(['age_verified', 'identity_verified', 'membership_status', 'vaccination_status', 'legal_name'])(
    'verified attribute %s is read-only (403)',
    async (name) => {
      expectError(await put(name, { value: true }), 403, 'FORBIDDEN', 'name', 'reserved_name');
    },
  );

  it.each(['is_adult', 'is_senior', 'loyalty_tier', 'risk_score'])(
    'computed attribute %s is read-only (403)',
    async (name) => {
      expectError(await put(name, { value: true }), 403, 'FORBIDDEN', 'name', 'reserved_name');
    },
  );

  it('unknown well-formed names are user attributes of any JSON value', async () => {
    const res = await put('shoe_size', { value: { eu: 42, us: 9 } });
    expect(res.json().data.kind).toBe('user');
    expect((await get('shoe_size')).json().data.value).toEqual({ eu: 42, us: 9 });
  });

  it.each([
    ['Email', 'invalid_format'],
    ['1abc', 'invalid_format'],
    ['has-dash', 'invalid_format'],
    ['a'.repeat(65), 'invalid_format'],
    ['%C3%A9t%C3%A9', 'invalid_format'],
  ])('a bad name in the path (%s) is 400 naming the field', async (name) => {
    expectError(await put(name, { value: 'x' }), 400, 'INVALID_REQUEST', 'name');
    expectError(await get(name), 400, 'INVALID_REQUEST', 'name');
  });

  it('rejects bad bodies: unknown fields, wrong types, missing value, malformed JSON, non-JSON', async () => {
    expectError(await put('nickname', { value: 'x', extra: 1 }), 400, 'INVALID_REQUEST', 'extra');
    expectError(await put('nickname', { value: 'x', encrypted: 'yes' }), 400, 'INVALID_REQUEST', 'encrypted');
    expectError(await put('nickname', {}), 400, 'INVALID_REQUEST', 'value');
    expectError(
      await put('nickname', { value: 'x', valid_until: 'tomorrow' }),
      400,
      'INVALID_REQUEST',
      'valid_until',
    );
    expectError(await put('nickname', [1, 2]), 400, 'INVALID_REQUEST');
    const malformed = await call({
      method: 'PUT',
      url: '/v1/attributes/nickname',
      payload: '{"value": ',
      headers: { 'content-type': 'application/json' },
    });
    expectError(malformed, 400, 'INVALID_REQUEST', 'body', 'malformed_json');
    const text = await call({
      method: 'PUT',
      url: '/v1/attributes/nickname',
      payload: 'value=x',
      headers: { 'content-type': 'text/plain' },
    });
    expectError(text, 400, 'INVALID_REQUEST');
    const huge = await put('nickname', { value: 'x'.repeat(1024 * 1024 + 10) });
    expectError(huge, 400, 'INVALID_REQUEST');
    expectError(await get('nickname'), 404, 'NOT_FOUND');
  });

  it('a PUT rejected before the handler is audited as UPDATE/ERROR; a bad name is not', async () => {
    const u = await seedUser(t.ctx);
    await put('nickname', { value: 'x', extra: 1 }, u.token);
    await call({
      method: 'PUT',
      url: '/v1/attributes/nickname',
      payload: '{',
      headers: { 'content-type': 'application/json' },
      token: u.token,
    });
    await put('Bad-Name', { value: 'x' }, u.token);
    const records = (await call({ method: 'GET', url: '/v1/audit', token: u.token })).json().data.records;
    expect(records.map((r: Record<string, string>) => [r.attribute_name, r.operation, r.result])).toEqual([
      ['nickname', 'UPDATE', 'ERROR'],
      ['nickname', 'UPDATE', 'ERROR'],
    ]);
  });

  it('rejects unknown query parameters', async () => {
    expectError(await call({ method: 'GET', url: '/v1/attributes?page=2' }), 400, 'INVALID_REQUEST', 'page');
    expectError(await call({ method: 'GET', url: '/v1/attributes/email?x=1' }), 400, 'INVALID_REQUEST', 'x');
    expectError(
      await call({ method: 'PUT', url: '/v1/attributes/email?x=1', payload: { value: 'a@b.org' } }),
      400,
      'INVALID_REQUEST',
      'x',
    );
  });

  it('needs a valid bearer token', async () => {
    expectError(await call({ method: 'GET', url: '/v1/attributes', token: null }), 401, 'UNAUTHORIZED');
    expectError(
      await call({ method: 'GET', url: '/v1/attributes', token: `ut_${'A'.repeat(43)}` }),
      401,
      'UNAUTHORIZED',
    );
    expectError(
      await call({ method: 'PUT', url: '/v1/attributes/email', token: 'nonsense', payload: { value: 1 } }),
      401,
      'UNAUTHORIZED',
    );
  });

  it('another user sees none of it', async () => {
    expectError(await get('email', other.token), 404, 'NOT_FOUND');
    const list = (await call({ method: 'GET', url: '/v1/attributes', token: other.token })).json().data;
    expect(list.attributes.map((a: { name: string }) => a.name)).not.toContain('email');
    expect(list.attributes.find((a: { name: string }) => a.name === 'user_id').value).toBe(other.userId);
  });

  it('temporal attributes: not yet valid, valid, expired — shown with their status', async () => {
    const u = await seedUser(t.ctx);
    const from = new Date(clock + DAY).toISOString();
    const until = new Date(clock + 2 * DAY).toISOString();
    const res = await put('season_pass', { value: 'P-1', valid_from: from, valid_until: until }, u.token);
    expect(res.json().data).toMatchObject({ valid_from: from, valid_until: until });
    expect((await get('season_pass', u.token)).json().data.status).toBe('not_yet_valid');
    const start = clock;
    try {
      clock = start + DAY + 1;
      expect((await get('season_pass', u.token)).json().data.status).toBe('valid');
      clock = start + 3 * DAY;
      const item = (await get('season_pass', u.token)).json().data;
      expect(item).toMatchObject({ status: 'expired', value: 'P-1' });
    } finally {
      clock = start;
    }
    expectError(
      await put('season_pass', { value: 'P', valid_until: new Date(clock - 1000).toISOString() }, u.token),
      400,
      'INVALID_REQUEST',
      'valid_until',
      'in_past',
    );
    expectError(
      await put('season_pass', { value: 'P', valid_from: until, valid_until: from }, u.token),
      400,
      'INVALID_REQUEST',
      'valid_until',
      'before_valid_from',
    );
    // Offsets are accepted and stored as UTC.
    const offset = await put(
      'season_pass',
      { value: 'P-2', valid_until: '2999-01-01T10:00:00+02:00', valid_from: null },
      u.token,
    );
    expect(offset.json().data.valid_until).toBe('2999-01-01T08:00:00.000Z');
  });

  it('GET /v1/attributes lists system, stored and computed attributes', async () => {
    const u = await seedUser(t.ctx);
    await put('date_of_birth', { value: '1950-06-15' }, u.token);
    await put('email', { value: 'old@example.org' }, u.token);
    await appendTransaction(
      t.ctx.database.db,
      {
        'user-id': u.ledgerId,
        'context-id': crypto.randomUUID(),
        attributes: [{ type: 'payment', context: 120_000 }],
        vendor: { id: crypto.randomUUID(), url: 'https://shop.example' },
        timestamp: clock - DAY,
        result: { code: 'ok' },
      },
      u.ledgerId,
    );
    const res = await call({ method: 'GET', url: '/v1/attributes', token: u.token });
    expect(res.statusCode).toBe(200);
    const byName = Object.fromEntries(
      res.json().data.attributes.map((a: { name: string }) => [a.name, a] as const),
    );
    expect(Object.keys(byName).sort()).toEqual(
      [
        'date_of_birth',
        'email',
        'is_adult',
        'is_senior',
        'loyalty_tier',
        'palm_registered',
        'registration_date',
        'risk_score',
        'user_id',
      ].sort(),
    );
    expect(byName.user_id).toMatchObject({ kind: 'system', value: u.userId });
    expect(byName.palm_registered.value).toEqual([]);
    expect(byName.is_adult).toMatchObject({ kind: 'computed', value: true });
    expect(byName.is_senior).toMatchObject({ kind: 'computed', value: true });
    expect(byName.loyalty_tier.value).toBe('silver'); // 1 transaction + 12 points for 1 200.00
    expect(byName.risk_score.value).toBe(0.4);
    expect(byName.email).toMatchObject({ kind: 'user', value: 'old@example.org', status: 'valid' });
  });

  it('DELETE removes a user attribute; a second DELETE is 404', async () => {
    await put('nickname', { value: 'Nina' });
    const res = await call({ method: 'DELETE', url: '/v1/attributes/nickname' });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({ name: 'nickname', deleted: true });
    expectError(await get('nickname'), 404, 'NOT_FOUND');
    expectError(await call({ method: 'DELETE', url: '/v1/attributes/nickname' }), 404, 'NOT_FOUND');
  });

  it('every access is audited with its result, without values', async () => {
    const u = await seedUser(t.ctx);
    await put('email', { value: 'audit.me@example.org' }, u.token);
    await get('email', u.token);
    await put('is_adult', { value: true }, u.token);
    await put('email', { value: 'broken' }, u.token);
    await call({ method: 'DELETE', url: '/v1/attributes/email', token: u.token });
    const res = await call({ method: 'GET', url: '/v1/audit', token: u.token });
    expect(res.statusCode).toBe(200);
    const records = res.json().data.records as Record<string, string>[];
    expect(records.map((r) => [r.attribute_name, r.operation, r.result])).toEqual([
      ['email', 'DELETE', 'SUCCESS'],
      ['email', 'UPDATE', 'ERROR'],
      ['is_adult', 'UPDATE', 'DENIED'],
      ['email', 'READ', 'SUCCESS'],
      ['email', 'UPDATE', 'SUCCESS'],
    ]);
    expect(records[0]).toMatchObject({ user_id: u.userId, user_agent: 'vitest' });
    expect(JSON.stringify(records)).not.toContain('audit.me');
    // The list audits one READ per attribute shown.
    await call({ method: 'GET', url: '/v1/attributes', token: u.token });
    const after = (await call({ method: 'GET', url: '/v1/audit', token: u.token })).json().data.records;
    expect(after.length).toBeGreaterThan(records.length + 3);
    expect(after[0].operation).toBe('READ');
  });

  it('rate-limits the user routes at 60 per minute per token', async () => {
    const u = await seedUser(t.ctx);
    let last = await call({ method: 'GET', url: '/v1/attributes/user_id', token: u.token });
    expect(last.headers['x-ratelimit-limit']).toBe('60');
    for (let i = 0; i < 60; i++) last = await call({ method: 'GET', url: '/v1/audit', token: u.token });
    expectError(last, 429, 'RATE_LIMITED');
    expect(last.headers['retry-after']).toBeTruthy();
    expect(last.headers['x-ratelimit-remaining']).toBe('0');
  });
});
