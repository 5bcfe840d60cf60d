import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';

describe('health and status', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp();
    key = (await seedVendor(t.ctx)).api_key;
  });
  afterAll(() => t.close());

  it('GET /health is open, plain, with the revision', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', version: t.ctx.version });
    expect(res.headers['x-ratelimit-limit']).toBe('1000');
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  it('reuses a well-formed X-Request-Id and replaces a bad one', async () => {
    const good = await t.app.inject({
      method: 'GET',
      url: '/health',
      headers: { 'x-request-id': 'abc.DEF-1_2' },
    });
    expect(good.headers['x-request-id']).toBe('abc.DEF-1_2');
    const bad = await t.app.inject({
      method: 'GET',
      url: '/health',
      headers: { 'x-request-id': 'no spaces!' },
    });
    expect(bad.headers['x-request-id']).not.toBe('no spaces!');
  });

  it('GET /api/v1/status needs a vendor key', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/status' });
    expect(res.statusCode).toBe(401);
    const body = res.json();
    expect(body.success).toBe(false);
    expect(body.error.code).toBe('UNAUTHORIZED');
    expect(body.meta.request_id).toBe(res.headers['x-request-id']);
  });

  it('GET /api/v1/status reports database, kiosks and vendor', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/status', headers: { 'x-api-key': key } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.success).toBe(true);
    expect(body.data).toMatchObject({
      status: 'ok',
      environment: 'development',
      database: { kind: t.ctx.database.kind, ok: true },
      pvs: { connected: 0 },
      vendor: { name: 'Cafe X', mode: 'test' },
    });
    expect(res.headers['x-ratelimit-limit']).toBe('100');
  });

  it('GET /api/v1/status counts the kiosks that serve the vendor: its own and unbound ones', async () => {
    const v = await seedVendor(t.ctx, 'Kiosk counter');
    const connected = async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/status',
        headers: { 'x-api-key': v.api_key },
      });
      return res.json().data.pvs.connected as number;
    };
    const offOwn = t.ctx.kiosks.register({ pvsId: 'pvs-own', vendorId: v.vendor_id });
    const offOther = t.ctx.kiosks.register({ pvsId: 'pvs-other', vendorId: 'someone-else' });
    const offFree = t.ctx.kiosks.register({ pvsId: 'pvs-free', vendorId: null });
    expect(await connected()).toBe(2);
    offFree();
    expect(await connected()).toBe(1);
    offOwn();
    offOther();
    expect(await connected()).toBe(0);
  });

  it('GET /api/v1/status follows the probe: settled, pending, failed and rejected', async () => {
    const status = async () => {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/status', headers: { 'x-api-key': key } });
      expect(res.statusCode).toBe(200);
      const data = res.json().data;
      return `${data.status}/${data.database.ok}`;
    };
    const db = t.ctx.database;
    const original = db.ping;
    try {
      // A new promise per request, resolved later: awaited each time.
      db.ping = () => new Promise((resolve) => setTimeout(() => resolve(false), 1));
      expect(await status()).toBe('degraded/false');
      // One settled promise answered again: its value is the answer, the first time and after.
      const down = Promise.resolve(false);
      db.ping = () => down;
      expect(await status()).toBe('degraded/false');
      expect(await status()).toBe('degraded/false');
      db.ping = () => Promise.reject(new Error('probe failed'));
      expect(await status()).toBe('degraded/false');
      // An in-process store answers at once, without a promise.
      db.ping = () => false;
      expect(await status()).toBe('degraded/false');
    } finally {
      db.ping = original;
    }
    expect(await status()).toBe('ok/true');
    expect(await status()).toBe('ok/true');
  });

  it('unknown routes and wrong methods are 404 envelopes', async () => {
    for (const [method, url] of [
      ['GET', '/nope'],
      ['DELETE', '/health'],
    ] as const) {
      const res = await t.app.inject({ method, url });
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
    }
  });

  it('serves OpenAPI at /docs', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    expect(res.json().paths['/api/v1/status']).toBeTruthy();
    // the direct path takes one palm or several captures; a refusal may say it was ambiguous
    const direct = res.json().paths['/api/v1/auth'].post;
    const body = direct.requestBody.content['application/json'].schema;
    expect(Object.keys(body.properties)).toEqual(['auth_context', 'palm', 'captures']);
    expect(body.properties.captures).toMatchObject({ type: 'array', maxItems: 4 });
    expect(JSON.stringify(direct.responses['200'])).toContain('ambiguous_match');
  });
});
