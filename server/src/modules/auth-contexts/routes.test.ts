import { execFile } from 'node:child_process';
import { pseudonym } from '@palmid/contracts/crypto/ids';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  attestBody,
  createTestApp,
  seedUser,
  seedVendor,
  type TestApp,
  type TestDevice,
  vendorDevice,
} from '../../../dev/testing.ts';
import { writeAttribute } from '../attributes/service.ts';
import { verifyAuditChain } from '../audit/service.ts';
import { grantConsent } from '../consents/service.ts';
import { addPalm, dataKeyOf, ledgerIdFor, requireUser } from '../users/service.ts';
import { expireOverdue, forgetResultsOf, loadContext } from './state.ts';

const TEMPLATE = Buffer.from('palm-template-alice-0001').toString('base64');
const ROOT_CLI = new URL('../../cli/vendor.ts', import.meta.url).pathname;
const UNKNOWN = Buffer.from('palm-template-nobody-999').toString('base64');

describe('vendor auth contexts', () => {
  let t: TestApp;
  let clock = Date.parse('2026-06-01T12:00:00Z');
  let key: string;
  let vendorId: string;
  let otherKey: string;
  let alice: { userId: string; token: string; ledgerId: string };

  let device: TestDevice;
  // Palms on the direct path are attested by the vendor's capture host (docs/vendor-api.md).
  const api = (method: 'GET' | 'POST', url: string, body?: unknown, apiKey = key) =>
    t.app.inject({
      method,
      url,
      headers: { 'x-api-key': apiKey },
      ...(body === undefined ? {} : { payload: attestBody(device, body, clock) as object }),
    });

  beforeAll(async () => {
    t = await createTestApp({}, () => clock);
    const v = await seedVendor(t.ctx, 'Cafe X');
    key = v.api_key;
    vendorId = v.vendor_id;
    device = await vendorDevice(t.ctx, vendorId);
    otherKey = (await seedVendor(t.ctx, 'Other Bar')).api_key;
    alice = await seedUser(t.ctx);
    const db = t.ctx.database.db;
    // the ledger id this vendor sees (per vendor: docs/vendor-api.md, "Ledger")
    alice.ledgerId = ledgerIdFor(t.ctx, await requireUser(db, alice.userId), vendorId);
    const dk = await dataKeyOf(t.ctx, db, alice.userId);
    const template = new Uint8Array(Buffer.from(TEMPLATE, 'base64'));
    const palmId = await addPalm(t.ctx, db, alice.userId, dk, { hand: 'right', template });
    t.ctx.gallery.add({ palmId, userId: alice.userId, hand: 'right', template });
    for (const [name, value] of [
      ['email', 'alice@example.com'],
      ['date_of_birth', '2000-06-02'],
      ['phone', '+4915112345678'],
    ] as const) {
      await writeAttribute(t.ctx, db, alice.userId, { name, value }, 'user', clock);
    }
    await grantConsent(
      db,
      alice.userId,
      {
        vendor_id: vendorId,
        attributes: [
          { name: 'email', purpose: 'receipts', retention_days: 30 },
          { name: 'age_over_21', purpose: 'age check', retention_days: 0 },
        ],
      },
      clock,
    );
  });
  afterAll(() => t.close());
  beforeEach(() => {
    clock += 1000;
  });

  it('creates a pending payment context with defaults', async () => {
    const res = await api('POST', '/api/v1/auth/create', {
      auth_context: { type: 'payment', amount: 1250, attributes_optional: ['email'] },
    });
    expect(res.statusCode).toBe(201);
    const { data } = res.json();
    expect(data).toMatchObject({
      status: 'pending',
      type: 'payment',
      amount: 1250,
      currency: 'EUR',
      attributes_required: [],
      attributes_optional: ['email'],
      pvs_id: null,
    });
    expect(data.auth_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(data.expires_at) - Date.parse(data.created_at)).toBe(120_000);
  });

  it.each([
    [{ type: 'payment' }, 'amount', 'required'],
    [{ type: 'payment', amount: -5 }, 'amount', 'too_small'],
    [{ type: 'payment', amount: 1.5 }, 'amount', 'invalid_type'],
    [{ type: 'teleport' }, 'type', 'invalid_value'],
    [{ type: 'login', attributes_required: ['Bad Name'] }, 'attributes_required.0', 'invalid_format'],
    [{ type: 'login', expires_in_s: 0 }, 'expires_in_s', 'too_small'],
    [{ type: 'login', expires_in_s: 3601 }, 'expires_in_s', 'too_big'],
    [{ type: 'login', colour: 'red' }, 'colour', 'unknown_field'],
    [{ type: 'login', amount: 5 }, 'amount', 'invalid'],
  ])('rejects %j with field %s', async (ctxBody, field, reason) => {
    const res = await api('POST', '/api/v1/auth/create', { auth_context: ctxBody });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.error.code).toBe('INVALID_REQUEST');
    expect(body.error.details).toMatchObject({ field: `auth_context.${field}`, reason });
  });

  it('names an attribute that is neither in the catalogue nor a valid custom name', async () => {
    for (const [list, name] of [
      ['attributes_required', 'ledger_id'],
      ['attributes_optional', 'age_over_18'],
      ['attributes_optional', 'is_vip'],
      ['attributes_required', 'country_in_set'],
      ['attributes_required', 'Email'],
    ] as const) {
      const res = await api('POST', '/api/v1/auth/create', {
        auth_context: { type: 'login', [list]: ['email', name] },
      });
      expect(res.statusCode, name).toBe(400);
      expect(res.json().error.details).toMatchObject({ field: `auth_context.${list}.1` });
      expect(res.json().error.message).toContain(`'${name}'`);
    }
    // catalogue names (computed, system), custom names and the context's own age name are fine
    const fine = await api('POST', '/api/v1/auth/create', {
      auth_context: {
        type: 'entrance',
        minimum_age: 21,
        attributes_optional: ['is_adult', 'user_id', 'favourite_colour', 'age_over_21', 'pseudonym'],
      },
    });
    expect(fine.statusCode).toBe(201);
  });

  it('restricts excessive attribute requests', async () => {
    const names = Array.from({ length: 17 }, (_, i) => `attr_${i}`);
    const res = await api('POST', '/api/v1/auth/create', {
      auth_context: { type: 'login', attributes_optional: names },
    });
    expect(res.statusCode).toBe(400);
  });

  it('rejects malformed JSON, wrong content type and oversize bodies as 400', async () => {
    const bad = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      payload: '{"auth_context":',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.details.reason).toBe('malformed_json');
    const text = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': key, 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expect(text.statusCode).toBe(400);
    const big = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      payload: JSON.stringify({ auth_context: { type: 'login' }, pad: 'x'.repeat(1024 * 1024) }),
    });
    expect(big.statusCode).toBe(400);
    expect(big.json().error.details.reason).toBe('body_too_large');
  });

  it('status and cancel: another vendor sees 404; terminal contexts are not cancellable', async () => {
    const { data } = (await api('POST', '/api/v1/auth/create', { auth_context: { type: 'login' } })).json();
    expect((await api('GET', `/api/v1/auth/${data.auth_id}/status`, undefined, otherKey)).statusCode).toBe(
      404,
    );
    expect((await api('POST', `/api/v1/auth/${data.auth_id}/cancel`, undefined, otherKey)).statusCode).toBe(
      404,
    );
    const status = await api('GET', `/api/v1/auth/${data.auth_id}/status`);
    expect(status.json().data).toEqual({
      auth_id: data.auth_id,
      status: 'pending',
      type: 'login',
      amount: null,
      currency: null,
      created_at: data.created_at,
    });
    const cancel = await api('POST', `/api/v1/auth/${data.auth_id}/cancel`);
    expect(cancel.json().data).toEqual({ auth_id: data.auth_id, status: 'cancelled' });
    const again = await api('POST', `/api/v1/auth/${data.auth_id}/cancel`);
    expect(again.statusCode).toBe(400);
    expect(again.json().error.details.reason).toBe('not_cancellable');
    const after = await api('GET', `/api/v1/auth/${data.auth_id}/status`);
    expect(after.json().data.auth_result).toMatchObject({ success: false, reason: 'cancelled' });
    expect((await api('GET', '/api/v1/auth/not-a-uuid/status')).statusCode).toBe(400);
  });

  it('expires a context after its deadline', async () => {
    const { data } = (
      await api('POST', '/api/v1/auth/create', { auth_context: { type: 'login', expires_in_s: 5 } })
    ).json();
    clock += 6000;
    const res = await api('GET', `/api/v1/auth/${data.auth_id}/status`);
    expect(res.json().data.status).toBe('expired');
    expect(res.json().data.auth_result.reason).toBe('expired');
  });

  it('a status read past the deadline shows expired but writes and publishes nothing; the scheduler records it', async () => {
    const { data } = (
      await api('POST', '/api/v1/auth/create', { auth_context: { type: 'login', expires_in_s: 5 } })
    ).json();
    const events: unknown[] = [];
    const off = t.ctx.events.subscribe('auth.updated', (e) => events.push(e));
    clock += 6000;
    try {
      const read = (await api('GET', `/api/v1/auth/${data.auth_id}/status`)).json().data;
      expect(read).toMatchObject({ status: 'expired', auth_result: { success: false, reason: 'expired' } });
      expect((await loadContext(t.ctx.database.db, data.auth_id))?.status).toBe('pending');
      expect(events).toEqual([]);
      const swept = await expireOverdue(t.ctx);
      expect(swept.map((c) => c.id)).toContain(data.auth_id);
      expect((await loadContext(t.ctx.database.db, data.auth_id))?.status).toBe('expired');
      // The recorded result is the one the read showed (dated at the deadline).
      const after = (await api('GET', `/api/v1/auth/${data.auth_id}/status`)).json().data;
      expect(after).toEqual(read);
    } finally {
      off();
    }
  });

  it('one resolution searches the gallery once, also when proofs are prepared first', async () => {
    const search = vi.spyOn(t.ctx.gallery, 'search');
    try {
      const res = await api('POST', '/api/v1/auth', {
        auth_context: { type: 'entrance', minimum_age: 21, attributes_optional: ['email'] },
        palm: { template: TEMPLATE, hand: 'right', liveness: 0.97 },
      });
      expect(res.json().data.auth_result).toMatchObject({ success: true, attributes: { age_over_21: true } });
      expect(search).toHaveBeenCalledTimes(1);
    } finally {
      search.mockRestore();
    }
  });

  it('one-shot payment discloses exactly the consented attributes and writes ledger and audit', async () => {
    const res = await api('POST', '/api/v1/auth', {
      auth_context: { type: 'payment', amount: 499, attributes_optional: ['email', 'phone', 'pseudonym'] },
      palm: { template: TEMPLATE, hand: 'right', liveness: 0.97 },
    });
    expect(res.statusCode).toBe(200);
    const { data } = res.json();
    expect(data.status).toBe('completed');
    const pseudo = pseudonym(alice.userId, vendorId);
    expect(data.auth_result).toMatchObject({ success: true, user_id: pseudo, ledger_id: alice.ledgerId });
    expect(data.auth_result.attributes).toEqual({ email: 'alice@example.com', pseudonym: pseudo });
    // requested but not disclosed (no consent for phone): named, so a typo is not mistaken for a refusal
    expect(data.auth_result.withheld).toEqual(['phone']);

    const from = Math.floor(clock / 1000) - 60;
    const ledger = await api('GET', `/api/v1/ledger/transactions/${alice.ledgerId}?from=${from}`);
    expect(ledger.statusCode).toBe(200);
    const txs = ledger
      .json()
      .transactions.map((h: string) => JSON.parse(Buffer.from(h, 'hex').toString('utf8')));
    const tx = txs.find((x: { 'context-id': string }) => x['context-id'] === data.auth_id);
    expect(tx).toMatchObject({
      'user-id': alice.ledgerId,
      attributes: [
        { type: 'pseudonym', context: pseudo },
        { type: 'payment', context: 499 },
        { type: 'currency', context: 'EUR' },
      ],
      vendor: { id: vendorId, url: 'https://cafe-x.example' },
      timestamp: clock,
      result: { code: 'ok' },
    });
    const audit = await t.ctx.database.db
      .selectFrom('audit')
      .selectAll()
      .where('user_id', '=', alice.userId)
      .where('vendor_id', '=', vendorId)
      .execute();
    expect(
      audit.filter((a) => a.attribute_name === 'email' && a.result === 'SUCCESS').length,
    ).toBeGreaterThan(0);
    expect(audit.filter((a) => a.attribute_name === 'phone' && a.result === 'DENIED').length).toBeGreaterThan(
      0,
    );
    expect((await verifyAuditChain(t.ctx.database.db, t.ctx.keyring)).ok).toBe(true);
  });

  it('a required attribute without consent fails with consent_missing and discloses nothing', async () => {
    const { data } = (
      await api('POST', '/api/v1/auth', {
        auth_context: { type: 'payment', amount: 100, attributes_required: ['email', 'phone'] },
        palm: { template: TEMPLATE },
      })
    ).json();
    expect(data.status).toBe('failed');
    expect(data.auth_result).toMatchObject({
      success: false,
      reason: 'consent_missing',
      missing: ['phone'],
      attributes: {},
      withheld: ['email', 'phone'],
    });

    // `npm run vendor -- watch` names what is missing, and finds the server through PORT
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as { port: number }).port;
    const watched = await new Promise<{ code: number; out: string }>((done) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', ROOT_CLI, 'watch', '--auth-id', data.auth_id, '--until', data.auth_id],
        {
          env: { ...process.env, PALMID_API_KEY: key, PORT: String(port), PALMID_URL: '' },
          timeout: 60_000,
        },
        (err, out) => done({ code: err ? Number(err.code ?? 1) : 0, out }),
      ),
    );
    expect(watched.code).toBe(0);
    expect(watched.out).toMatch(new RegExp(`${data.auth_id}  failed  reason=consent_missing  missing=phone`));
  }, 90_000);

  it('unknown palm → no_match; low liveness → liveness_failed', async () => {
    const none = (
      await api('POST', '/api/v1/auth', { auth_context: { type: 'login' }, palm: { template: UNKNOWN } })
    ).json();
    expect(none.data.auth_result).toMatchObject({ success: false, reason: 'no_match', user_id: null });
    const fake = (
      await api('POST', '/api/v1/auth', {
        auth_context: { type: 'login' },
        palm: { template: TEMPLATE, liveness: 0.1 },
      })
    ).json();
    expect(fake.data.auth_result).toMatchObject({ success: false, reason: 'liveness_failed' });
  });

  it('entrance with minimum_age gives age_over_N and never the birth date', async () => {
    // Alice was born 2000-06-02: on 2026-06-01 she is 25.
    const ok = (
      await api('POST', '/api/v1/auth', {
        auth_context: { type: 'entrance', minimum_age: 21 },
        palm: { template: TEMPLATE },
      })
    ).json();
    expect(ok.data.auth_result).toMatchObject({ success: true, attributes: { age_over_21: true } });
    expect(JSON.stringify(ok.data)).not.toContain('2000-06-02');
    const noConsent = (
      await api('POST', '/api/v1/auth', {
        auth_context: { type: 'entrance', minimum_age: 30 },
        palm: { template: TEMPLATE },
      })
    ).json();
    expect(noConsent.data.auth_result).toMatchObject({
      success: false,
      reason: 'consent_missing',
      missing: ['age_over_30'],
    });
  });

  it('ledger: validation and isolation', async () => {
    const now = Math.floor(clock / 1000);
    const cases: [string, number, string][] = [
      [`/api/v1/ledger/transactions/${alice.ledgerId.toUpperCase()}?from=${now - 10}`, 400, 'ledger_id'],
      [`/api/v1/ledger/transactions/${alice.ledgerId}`, 400, 'from'],
      [`/api/v1/ledger/transactions/${alice.ledgerId}?from=abc`, 400, 'from'],
      [`/api/v1/ledger/transactions/${alice.ledgerId}?from=${now}&to=${now - 1}`, 400, 'to'],
      [`/api/v1/ledger/transactions/${alice.ledgerId}?from=${now - 7_776_001}&to=${now}`, 400, 'to'],
      [`/api/v1/ledger/transactions/${alice.ledgerId}?from=${now - 7_776_001}`, 400, 'from'],
      [`/api/v1/ledger/transactions/${'0'.repeat(64)}?from=${now - 10}`, 404, 'ledger_id'],
    ];
    for (const [url, status, field] of cases) {
      const res = await api('GET', url);
      expect(res.statusCode, url).toBe(status);
      expect(res.json().error.details.field, url).toBe(field);
    }
    const other = await api(
      'GET',
      `/api/v1/ledger/transactions/${alice.ledgerId}?from=${now - 3600}`,
      undefined,
      otherKey,
    );
    expect(other.statusCode).toBe(404);
    const exact = await api(
      'GET',
      `/api/v1/ledger/transactions/${alice.ledgerId}?from=${now - 7_776_000}&to=${now}`,
    );
    expect(exact.statusCode).toBe(200);
    expect(exact.headers['x-ratelimit-limit']).toBe('50');
  });

  // last: it drops alice's stored results
  it('an Idempotency-Key replay of a resolution shows the result as the context keeps it now', async () => {
    const body = attestBody(
      device,
      { auth_context: { type: 'login', attributes_optional: ['email'] }, palm: { template: TEMPLATE } },
      clock,
    ) as object;
    const send = () =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/auth',
        headers: { 'x-api-key': key, 'idempotency-key': 'login-42' },
        payload: body,
      });
    const first = await send();
    expect(first.json().data.auth_result.attributes).toMatchObject({ email: 'alice@example.com' });
    const again = await send();
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json().data).toEqual(first.json().data);
    await forgetResultsOf(t.ctx.database.db, alice.userId);
    const later = await send();
    expect(later.headers['idempotent-replayed']).toBe('true');
    expect(later.json().data.auth_id).toBe(first.json().data.auth_id);
    expect(later.json().data.auth_result.attributes).toEqual({});
    expect(later.body).not.toContain('alice@example.com');
  });
});

describe('vendor keys and scopes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('a key without the auth scope gets 403; malformed and revoked keys 401', async () => {
    const usersOnly = await seedVendor(t.ctx, 'Users Only', ['users']);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': usersOnly.api_key },
      payload: { auth_context: { type: 'login' } },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('FORBIDDEN');
    for (const k of ['sk_test_short', 'nonsense', `sk_test_${'A'.repeat(43)}`]) {
      const r = await t.app.inject({ method: 'GET', url: '/api/v1/status', headers: { 'x-api-key': k } });
      expect(r.statusCode).toBe(401);
    }
  });

  it('refuses live keys outside production', async () => {
    const r = await t.app.inject({
      method: 'GET',
      url: '/api/v1/status',
      headers: { 'x-api-key': `sk_live_${'A'.repeat(43)}` },
    });
    expect(r.statusCode).toBe(401);
    expect(r.json().error.details.reason).toBe('live_key_outside_production');
  });
});

describe('production refuses test keys', () => {
  it('401 for sk_test_ in production', async () => {
    const t = await createTestApp({ PALMID_ENV: 'production' });
    try {
      const v = await seedVendor(t.ctx);
      const r = await t.app.inject({
        method: 'GET',
        url: '/api/v1/status',
        headers: { 'x-api-key': v.api_key },
      });
      expect(r.statusCode).toBe(401);
      expect(r.json().error.details.reason).toBe('test_key_in_production');
    } finally {
      await t.close();
    }
  });
});
