import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';

/** `Idempotency-Key` on vendor POSTs (docs/vendor-api.md, "Idempotency"), through the HTTP interface. */
describe('Idempotency-Key', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const setup = async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' });
    const v = await seedVendor(t.ctx);
    const post = (url: string, payload: object | undefined, key?: string, apiKey = v.api_key) =>
      t!.app.inject({
        method: 'POST',
        url,
        headers: { 'x-api-key': apiKey, ...(key !== undefined ? { 'idempotency-key': key } : {}) },
        ...(payload ? { payload } : {}),
      });
    const contexts = async () =>
      (await t!.ctx.database.db.selectFrom('auth_contexts').select('id').execute()).length;
    return { v, post, contexts };
  };

  it('replays the first answer for the same key and body, once done', async () => {
    const { post, contexts } = await setup();
    const body = { auth_context: { type: 'payment', amount: 1250, currency: 'EUR' } };
    const first = await post('/api/v1/auth/create', body, 'order-1');
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await post('/api/v1/auth/create', body, 'order-1');
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json().data).toEqual(first.json().data);
    expect(await contexts()).toBe(1);
    // without a key, or with another key, it is a new request
    expect((await post('/api/v1/auth/create', body)).statusCode).toBe(201);
    expect((await post('/api/v1/auth/create', body, 'order-2')).json().data.auth_id).not.toBe(
      first.json().data.auth_id,
    );
    expect(await contexts()).toBe(3);
  });

  it('a replayed read is answered as it would be now: a consent revoked since is honoured', async () => {
    const { v, post } = await setup();
    const created = (
      await post('/api/v1/mpc/users/create', { attributes: { email: 'dora@example.com' } })
    ).json().data;
    const user = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
      t!.app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${created.user_token}` },
        ...(payload ? { payload } : {}),
      });
    const consent = (
      await user('POST', '/v1/consents', {
        vendor_id: v.vendor_id,
        attributes: [{ name: 'email', purpose: 'receipts', retention_days: 30 }],
      })
    ).json().data;
    const read = () => post('/api/v1/mpc/users/read', { user_id: created.user_id }, 'read-1');
    const first = await read();
    expect(first.statusCode).toBe(200);
    expect(first.json().data.attributes).toEqual({ email: 'dora@example.com' });
    // the key's first answer is not kept: nothing of the person's values lies in the store
    const kept = await t!.ctx.database.db.selectFrom('idempotency').selectAll().execute();
    expect(JSON.stringify(kept)).not.toContain('dora@example.com');
    expect((await user('DELETE', `/v1/consents/${consent.consent_id ?? consent.id}`)).statusCode).toBe(200);
    const again = await read();
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json().data.attributes).toEqual({});
    // the same key with another body is still refused
    const other = await post(
      '/api/v1/mpc/users/read',
      { user_id: '00000000-0000-4000-8000-000000000000' },
      'read-1',
    );
    expect(other.json().error.details).toMatchObject({ reason: 'idempotency_key_reused' });
  });

  it('refuses the same key with another body or on another route', async () => {
    const { post } = await setup();
    await post('/api/v1/auth/create', { auth_context: { type: 'login' } }, 'k');
    for (const res of [
      await post('/api/v1/auth/create', { auth_context: { type: 'login', expires_in_s: 60 } }, 'k'),
      await post('/api/v1/webhooks', { url: 'https://hooks.example.com/x' }, 'k'),
    ]) {
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({
        code: 'INVALID_REQUEST',
        details: { field: 'Idempotency-Key', reason: 'idempotency_key_reused' },
      });
    }
  });

  it('keys are per API key; a refused request is not kept; bad keys are 400', async () => {
    const { post, contexts } = await setup();
    const other = await seedVendor(t!.ctx, 'Other');
    const body = { auth_context: { type: 'login' } };
    await post('/api/v1/auth/create', body, 'shared');
    const theirs = await post('/api/v1/auth/create', body, 'shared', other.api_key);
    expect(theirs.statusCode).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(await contexts()).toBe(2);

    const bad = await post('/api/v1/auth/create', { auth_context: { type: 'payment' } }, 'retry-me');
    expect(bad.statusCode).toBe(400);
    const fixed = await post('/api/v1/auth/create', { auth_context: { type: 'payment' } }, 'retry-me');
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();

    const id = (await post('/api/v1/auth/create', body, 'c')).json().data.auth_id;
    const cancel = await post(`/api/v1/auth/${id}/cancel`, undefined, 'cancel-1');
    expect(cancel.statusCode).toBe(200);
    const cancelAgain = await post(`/api/v1/auth/${id}/cancel`, undefined, 'cancel-1');
    expect(cancelAgain.statusCode).toBe(200); // not "not_cancellable": the first answer
    expect(cancelAgain.headers['idempotent-replayed']).toBe('true');

    for (const key of ['x'.repeat(256), 'tab\there', '']) {
      const res = await post('/api/v1/auth/create', body, key);
      expect(res.statusCode, JSON.stringify(key)).toBe(400);
      expect(res.json().error.details).toEqual({ field: 'Idempotency-Key', reason: 'invalid' });
    }
    expect((await post('/api/v1/auth/create', body, 'x'.repeat(255))).statusCode).toBe(201);
  });

  it('a key whose first request is still running is in use; after a day it is forgotten', async () => {
    let now = Date.now();
    t = await createTestApp({ PALMID_ENV: 'sandbox' }, () => now);
    const v = await seedVendor(t.ctx);
    const post = (key: string) =>
      t!.app.inject({
        method: 'POST',
        url: '/api/v1/auth/create',
        headers: { 'x-api-key': v.api_key, 'idempotency-key': key },
        payload: { auth_context: { type: 'login' } },
      });
    const [a, b] = await Promise.all([post('same'), post('same')]);
    const codes = [a.statusCode, b.statusCode].sort();
    // both answered at once: one did the work, the other was told to retry (or replayed it if it came after)
    if (codes[0] === 201 && codes[1] === 201)
      expect([a, b].some((r) => r.headers['idempotent-replayed'])).toBe(true);
    else {
      expect(codes).toEqual([201, 400]);
      expect([a, b].find((r) => r.statusCode === 400)!.json().error.details.reason).toBe(
        'idempotency_key_in_use',
      );
    }
    now += 24 * 3600_000 + 1000;
    const later = await post('same');
    expect(later.statusCode).toBe(201);
    expect(later.headers['idempotent-replayed']).toBeUndefined();
  });

  it('OpenAPI documents the header on every vendor POST, the webhook routes and their signature', async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' });
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json() as {
      paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>>;
      tags?: { name: string; description: string }[];
    };
    const posts = Object.entries(doc.paths).filter(
      ([path, ops]) => path.startsWith('/api/v1/') && ops.post !== undefined,
    );
    expect(posts.map(([p]) => p)).toEqual(
      expect.arrayContaining([
        '/api/v1/auth/create',
        '/api/v1/auth',
        '/api/v1/auth/{auth_id}/cancel',
        '/api/v1/mpc/users/create',
        '/api/v1/webhooks',
        '/api/v1/webhooks/deliveries/{id}/replay',
      ]),
    );
    for (const [path, ops] of posts)
      expect(
        ops.post!.parameters?.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'),
        path,
      ).toBe(true);
    expect(doc.paths['/api/v1/webhooks']!.get).toBeDefined();
    expect(doc.paths['/api/v1/webhooks/{id}']!.delete).toBeDefined();
    expect(doc.paths['/api/v1/webhooks/deliveries']!.get).toBeDefined();
    expect(doc.tags?.find((g) => g.name === 'webhooks')?.description).toMatch(/Palmid-Signature: t=/);
    expect(doc.paths['/api/v1/ledger/transactions/{ledger_id}']!.get).toBeDefined();
  });
});
