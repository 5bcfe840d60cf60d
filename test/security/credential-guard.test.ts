import { randomUUID } from 'node:crypto';
import { errorBodySchema } from '@palmid/shared/envelope.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createPvs } from '../../server/src/modules/pvs/service.ts';
import { createVendor } from '../../server/src/modules/vendors/service.ts';
import { RATE_LIMITS } from '../../server/src/plugins/app/rate-limit.ts';
import { createTestApp, type TestApp } from '../../server/src/testing.ts';

/**
 * Failed credential checks are budgeted per client IP on every way in (REST API key, user token,
 * /ws/vendor, /ws/pvs): past the budget the IP is refused with 429 whatever it presents, so guessing
 * keys costs the server no lookups and a valid key is not told apart from a guess.
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

describe('per-IP budget for failed credentials', () => {
  let t: TestApp;
  let base: string;
  let vendor: { vendor_id: string; api_key: string };
  let kioskKey: string;

  beforeAll(async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' });
    vendor = await createVendor(t.ctx.database.db, { name: 'Guarded Shop' });
    kioskKey = (await createPvs(t.ctx.database.db, { vendorId: vendor.vendor_id, name: 'Till 1' }))
      .device_token;
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const status = (url: string, headers: Record<string, string>, ip = '203.0.113.7') =>
    t.app.inject({ method: 'GET', url, headers, remoteAddress: ip });

  it(`answers 401 to the first ${BUDGET} bad keys of an IP, then 429 with Retry-After even for a valid key`, async () => {
    const bad = { 'x-api-key': `pk_sandbox_${'0'.repeat(64)}` };
    for (let i = 0; i < BUDGET; i++) {
      // bad API keys and bad user tokens share one budget
      const res =
        i % 2 === 0
          ? await status('/api/v1/auth/x/status', bad)
          : await status('/v1/attributes', { authorization: 'Bearer nope' });
      expect(res.statusCode, `attempt ${i + 1}`).toBe(401);
    }
    const good = { 'x-api-key': vendor.api_key };
    const refused = await status('/api/v1/auth/x/status', good);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    const body = errorBodySchema.parse(refused.json());
    expect(body.error.code).toBe('RATE_LIMITED');
    expect(body.error.details).toMatchObject({ reason: 'too_many_failures' });
    // another address is unaffected, and a valid key there works
    const other = await status(`/api/v1/auth/${randomUUID()}/status`, good, '198.51.100.9');
    expect(other.statusCode).toBe(404); // past authentication: the context does not exist
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

  it('counts and refuses on /ws/vendor and /ws/pvs too (real sockets)', async () => {
    // the listening server sees 127.0.0.1; spend its budget over both sockets
    const wsBase = base.replace('http', 'ws');
    for (let i = 0; i < BUDGET; i++) {
      const r =
        i % 2 === 0
          ? await closeReason(`${wsBase}/ws/vendor`, { 'x-api-key': 'pk_sandbox_guess' })
          : await closeReason(`${wsBase}/ws/pvs`, { authorization: 'Bearer pvs_guess' });
      expect(r.reason, `attempt ${i + 1}`).toBe('unauthorized');
    }
    const vendorSock = await closeReason(`${wsBase}/ws/vendor`, { 'x-api-key': vendor.api_key });
    expect(vendorSock).toMatchObject({ code: 1008, reason: 'too_many_failures' });
    const pvsSock = await closeReason(`${wsBase}/ws/pvs`, { authorization: `Bearer ${kioskKey}` });
    expect(pvsSock).toMatchObject({ code: 1008, reason: 'too_many_failures' });
    const rest = await fetch(`${base}/api/v1/auth/create`, {
      method: 'POST',
      headers: { 'x-api-key': vendor.api_key, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'payment', amount: 1 }),
    });
    expect(rest.status).toBe(429);
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
    for (let i = 0; i < BUDGET; i++)
      expect((await via('203.0.113.50', 'pk_sandbox_guess')).statusCode).toBe(401);
    expect((await via('203.0.113.50', key)).statusCode).toBe(429);
    expect((await via('203.0.113.51', key)).statusCode).toBe(404);
  });

  it('ignores X-Forwarded-For from an untrusted peer', async () => {
    for (let i = 0; i < BUDGET; i++)
      expect((await via(`198.51.100.${i}`, 'pk_sandbox_guess', '192.0.2.9')).statusCode).toBe(401);
    expect((await via('198.51.100.200', key, '192.0.2.9')).statusCode).toBe(429);
  });
});
