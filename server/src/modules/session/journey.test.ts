import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';
import { createClaimCode, createUser, issueUserToken } from '../users/service.ts';

/** The whole user API over a real listening socket, as a person with curl would use it. */
describe('user journey over HTTP', () => {
  let t: TestApp;
  let base = '';
  let clock = Date.now();

  beforeAll(async () => {
    t = await createTestApp({}, () => clock);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  async function send(method: string, path: string, token?: string, body?: unknown) {
    const res = await fetch(base + path, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    // biome-ignore lint/suspicious/noExplicitAny: the test reads response JSON loosely
    return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, any> };
  }

  it('claim code → token → attributes → consent → export → erasure', async () => {
    const user = await createUser(t.ctx, t.ctx.database.db, null);
    const { claim_code } = await createClaimCode(t.ctx, t.ctx.database.db, user.id);
    const vendor = await seedVendor(t.ctx, 'Journey Cafe');

    const session = await send('POST', '/v1/session', undefined, { claim_code });
    expect(session.status).toBe(200);
    const token = session.json.data.user_token as string;

    expect((await send('PUT', '/v1/attributes/email', token, { value: 'journey@example.org' })).status).toBe(
      200,
    );
    expect((await send('PUT', '/v1/attributes/date_of_birth', token, { value: '2001-05-04' })).status).toBe(
      200,
    );
    const consent = await send('POST', '/v1/consents', token, {
      vendor_id: vendor.vendor_id,
      attributes: [{ name: 'is_adult', purpose: 'age check', retention_days: 0 }],
    });
    expect(consent.status).toBe(201);

    const list = await send('GET', '/v1/attributes', token);
    expect(list.headers.get('x-ratelimit-limit')).toBe('60');
    expect(list.headers.get('x-request-id')).toBe(list.json.meta.request_id);
    const names = list.json.data.attributes.map((a: { name: string }) => a.name);
    expect(names).toEqual(expect.arrayContaining(['user_id', 'email', 'date_of_birth', 'is_adult']));

    const download = await fetch(`${base}/v1/gdpr/export`, { headers: { authorization: `Bearer ${token}` } });
    expect(download.headers.get('content-disposition')).toMatch(/^attachment; filename="palmid-export-/);
    const exported = (await download.json()) as { data: { consents: unknown[]; attributes: unknown[] } };
    expect(exported.data.consents).toHaveLength(1);

    const erased = await send('DELETE', '/v1/gdpr/delete-me', token);
    expect(erased.json.data.deleted).toBe(true);
    const after = await send('GET', '/v1/attributes', token);
    expect(after.status).toBe(401);
    expect(after.json.error.code).toBe('UNAUTHORIZED');
  });

  it('an expired token is 401 with reason expired', async () => {
    const user = await createUser(t.ctx, t.ctx.database.db, null);
    const { user_token } = await issueUserToken(t.ctx, t.ctx.database.db, user.id);
    const start = clock;
    clock = start + 31 * 86_400_000;
    try {
      const res = await send('GET', '/v1/consents', user_token);
      expect(res.status).toBe(401);
      expect(res.json.error.details).toMatchObject({ field: 'Authorization', reason: 'expired' });
    } finally {
      clock = start;
    }
  });

  it('a request body over 1 MiB is 400, never a 500', async () => {
    const user = await createUser(t.ctx, t.ctx.database.db, null);
    const { user_token } = await issueUserToken(t.ctx, t.ctx.database.db, user.id);
    const res = await send('PUT', '/v1/attributes/blob', user_token, { value: 'x'.repeat(1_100_000) });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('INVALID_REQUEST');
  });
});
