import { randomUUID } from 'node:crypto';
import { errorBodySchema } from '@palmid/contracts/envelope';
import { createTestApp, seedUser, type TestApp } from '@palmid/server/dev/testing';
import { RATE_LIMITS } from '@palmid/server/lib/rate-limits';
import { createPvs } from '@palmid/server/modules/pvs/service';
import { createVendor } from '@palmid/server/modules/vendors/service';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

/**
 * Failed credential checks are budgeted per (client IP, credential prefix) on every way in (REST API key,
 * user token, /ws/vendor, /ws/pvs). The budget refuses only credentials that fail: past it a failing
 * credential is answered 429 instead of 401, while a valid key or token from the same address is always
 * served (docs/security.md). On the old per-IP budget 30 bad keys locked out every valid one.
 */
const BUDGET = RATE_LIMITS.credentials[0].points;

const closeReason = (url: string, headers: Record<string, string>) =>
  new Promise<{ code: number; reason: string; opened: boolean }>((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    let opened = false;
    ws.on('open', () => {
      opened = true;
    });
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString(), opened }));
    ws.on('error', reject);
  });

/** Opens a socket and reports whether it is still open 300 ms later (a refused one is closed by then). */
const staysOpen = (url: string, headers: Record<string, string>) =>
  new Promise<boolean>((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    let closed = false;
    ws.on('close', () => {
      closed = true;
    });
    ws.on('error', reject);
    ws.on('open', () =>
      setTimeout(() => {
        resolve(!closed);
        ws.close();
      }, 300),
    );
  });

const badKey = `sk_test_${'A'.repeat(43)}`;
const badToken = `ut_${'A'.repeat(43)}`;

describe('budget for failed credentials per (IP, prefix)', () => {
  let t: TestApp;
  let base: string;
  let vendor: { vendor_id: string; api_key: string };
  let userToken: string;
  let kioskKey: string;

  beforeAll(async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' });
    vendor = await createVendor(t.ctx.database.db, { name: 'Guarded Shop' });
    userToken = (await seedUser(t.ctx)).token;
    kioskKey = (await createPvs(t.ctx.database.db, { vendorId: vendor.vendor_id, name: 'Till 1' }))
      .device_token;
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const status = (url: string, headers: Record<string, string>, ip = '203.0.113.7') =>
    t.app.inject({ method: 'GET', url, headers, remoteAddress: ip });

  it(`answers 401 to the first ${BUDGET} bad keys of an IP, then 429 to bad keys only: valid keys and tokens keep working`, async () => {
    for (let i = 0; i < BUDGET; i++) {
      const res = await status('/api/v1/auth/x/status', { 'x-api-key': badKey });
      expect(res.statusCode, `attempt ${i + 1}`).toBe(401);
    }
    const refused = await status('/api/v1/auth/x/status', { 'x-api-key': badKey });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    const body = errorBodySchema.parse(refused.json());
    expect(body.error.code).toBe('RATE_LIMITED');
    expect(body.error.details).toMatchObject({ reason: 'too_many_failures' });
    // the valid key from the same address is served (past authentication: the context does not exist)
    const good = await status(`/api/v1/auth/${randomUUID()}/status`, { 'x-api-key': vendor.api_key });
    expect(good.statusCode).toBe(404);
    // and so is a valid user token; a bad token (another prefix) still gets its own 401
    const attrs = await status('/v1/attributes', { authorization: `Bearer ${userToken}` });
    expect(attrs.statusCode).toBe(200);
    const badUser = await status('/v1/attributes', { authorization: `Bearer ${badToken}` });
    expect(badUser.statusCode).toBe(401);
  });

  it('valid credentials do not use up the budget', async () => {
    for (let i = 0; i < BUDGET + 5; i++) {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/auth/unknown-id/status',
        headers: { 'x-api-key': vendor.api_key },
        remoteAddress: '192.0.2.44',
      });
      expect(res.statusCode).not.toBe(429);
    }
  });

  it('counts on /ws/vendor and /ws/pvs too, and never refuses their valid keys (real sockets)', async () => {
    // the listening server sees 127.0.0.1; spend its budget over both sockets
    const wsBase = base.replace('http', 'ws');
    for (let i = 0; i < BUDGET; i++) {
      const r = await closeReason(`${wsBase}/ws/vendor`, { 'x-api-key': badKey });
      expect(r.reason, `attempt ${i + 1}`).toBe('unauthorized');
    }
    for (let i = 0; i < BUDGET; i++) {
      const r = await closeReason(`${wsBase}/ws/pvs`, { authorization: `Bearer pvs_${'A'.repeat(43)}` });
      expect(r.reason, `attempt ${i + 1}`).toBe('unauthorized');
    }
    expect(await closeReason(`${wsBase}/ws/vendor`, { 'x-api-key': badKey })).toMatchObject({
      code: 1008,
      reason: 'too_many_failures',
    });
    expect(
      await closeReason(`${wsBase}/ws/pvs`, { authorization: `Bearer pvs_${'B'.repeat(43)}` }),
    ).toMatchObject({ code: 1008, reason: 'too_many_failures' });
    expect(await staysOpen(`${wsBase}/ws/vendor`, { 'x-api-key': vendor.api_key })).toBe(true);
    expect(await staysOpen(`${wsBase}/ws/pvs`, { authorization: `Bearer ${kioskKey}` })).toBe(true);
    const rest = await fetch(`${base}/api/v1/auth/create`, {
      method: 'POST',
      headers: { 'x-api-key': vendor.api_key, 'content-type': 'application/json' },
      body: JSON.stringify({ auth_context: { type: 'login' } }),
    });
    expect(rest.status).toBe(201);
  });
});

describe('behind a trusted reverse proxy (PALMID_TRUST_PROXY)', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox', PALMID_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' });
    key = (await createVendor(t.ctx.database.db, { name: 'Proxied Shop' })).api_key;
  });
  afterAll(async () => {
    await t?.close();
  });

  const via = (client: string, apiKey: string, proxy = '10.1.2.3') =>
    t.app.inject({
      method: 'GET',
      url: `/api/v1/auth/${randomUUID()}/status`,
      headers: { 'x-api-key': apiKey, 'x-forwarded-for': client },
      remoteAddress: proxy,
    });

  it('budgets the client named by the proxy, not the proxy', async () => {
    for (let i = 0; i < BUDGET; i++) expect((await via('203.0.113.50', badKey)).statusCode).toBe(401);
    expect((await via('203.0.113.50', badKey)).statusCode).toBe(429);
    expect((await via('203.0.113.51', badKey)).statusCode).toBe(401);
    expect((await via('203.0.113.50', key)).statusCode).toBe(404);
  });

  it('ignores X-Forwarded-For from an untrusted peer', async () => {
    for (let i = 0; i < BUDGET; i++)
      expect((await via(`198.51.100.${i}`, badKey, '192.0.2.9')).statusCode).toBe(401);
    expect((await via('198.51.100.200', badKey, '192.0.2.9')).statusCode).toBe(429);
    expect((await via('198.51.100.201', key, '192.0.2.9')).statusCode).toBe(404);
  });
});
