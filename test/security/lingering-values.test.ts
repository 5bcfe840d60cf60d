import {
  attestPalms,
  createTestApp,
  seedVendor,
  type TestApp,
  type TestDevice,
  vendorDevice,
} from '@palmid/server/dev/testing';
import { readResult, stripLapsedValues, VALUES_KEPT_MS } from '@palmid/server/modules/auth-contexts/state';
import { authContextStore } from '@palmid/server/modules/auth-contexts/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomTemplate } from '../support/templates.ts';
import { Recorder } from './sockets.ts';

/**
 * Disclosed values do not linger (docs/security.md): a stored result keeps attribute values at most an hour
 * after its context ended; then the status read and `/ws/vendor subscribe` show their names only, and the
 * scheduler's sweep leaves no value in the stored row. The service's clock is the test's (an hour cannot
 * be waited for); requests go over real HTTP and WebSocket to a listening server.
 */
describe('stored results keep values at most an hour (real sockets, test clock)', () => {
  let clock = Date.now();
  let t: TestApp;
  let base: string;
  let vendor: { vendor_id: string; api_key: string };
  let host: TestDevice;

  const call = async <T>(
    method: string,
    path: string,
    opts: { key?: string; token?: string; body?: unknown },
  ) => {
    const headers: Record<string, string> = {};
    if (opts.key) headers['x-api-key'] = opts.key;
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
    });
    return { status: res.status, body: (await res.json()) as T };
  };

  beforeAll(async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' }, () => clock);
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    vendor = await seedVendor(t.ctx, 'Hour Shop');
    host = await vendorDevice(t.ctx, vendor.vendor_id);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('an hour after the context ended, status and subscribe show the names; the sweep strips the row', async () => {
    const template = randomTemplate();
    const created = await call<{ data: { user_token: string } }>('POST', '/api/v1/mpc/users/create', {
      key: vendor.api_key,
      body: {
        attributes: { email: 'lin@example.com' },
        palms: attestPalms(host, [{ hand: 'right', template }]),
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const token = created.body.data.user_token;
    const consent = await call('POST', '/v1/consents', {
      token,
      body: {
        vendor_id: vendor.vendor_id,
        attributes: [{ name: 'email', purpose: 'receipts', retention_days: 365 }],
      },
    });
    expect(consent.status, JSON.stringify(consent.body)).toBe(201);
    const done = await call<{
      data: { auth_id: string; auth_result: { attributes: Record<string, unknown> } };
    }>('POST', '/api/v1/auth', {
      key: vendor.api_key,
      body: {
        auth_context: { type: 'login', attributes_required: ['email'] },
        palm: host.direct({ template, hand: 'right', liveness: 0.99 }, clock),
      },
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const authId = done.body.data.auth_id;
    expect(done.body.data.auth_result.attributes).toEqual({ email: 'lin@example.com' });

    type Status = {
      data: { auth_result: { attributes: Record<string, unknown>; attributes_removed?: string[] } };
    };
    const status = () => call<Status>('GET', `/api/v1/auth/${authId}/status`, { key: vendor.api_key });
    const subscribe = async () => {
      const s = await Recorder.open(`${base.replace(/^http/, 'ws')}/ws/vendor`, {
        'x-api-key': vendor.api_key,
      });
      try {
        return (await s.call('s', 'subscribe', { auth_id: authId })).result as Status['data'];
      } finally {
        s.ws.close();
      }
    };

    // within the hour: the value is there
    clock += VALUES_KEPT_MS - 1000;
    expect((await status()).body.data.auth_result.attributes).toEqual({ email: 'lin@example.com' });
    expect((await subscribe()).auth_result.attributes).toEqual({ email: 'lin@example.com' });

    // past it: names only, before any sweep
    clock += 2000;
    expect((await status()).body.data.auth_result).toMatchObject({
      attributes: {},
      attributes_removed: ['email'],
    });
    expect((await subscribe()).auth_result).toMatchObject({ attributes: {}, attributes_removed: ['email'] });

    // the sweep re-seals the stored row without the value
    expect(await stripLapsedValues(t.ctx)).toBeGreaterThanOrEqual(1);
    const row = await authContextStore(t.ctx.database.db).get(authId);
    expect(row?.valuesUntil).toBeNull();
    expect(readResult(t.ctx, row!)).toMatchObject({ attributes: {}, attributes_removed: ['email'] });
    expect(JSON.stringify(readResult(t.ctx, row!))).not.toContain('lin@example.com');
    // nothing left to strip
    expect(await stripLapsedValues(t.ctx)).toBe(0);
  });
});
