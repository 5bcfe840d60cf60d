import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';
import { checkWebhookUrl, isPublicAddress, resolveTarget } from './addresses.ts';
import { backoff } from './sender.ts';
import { pruneDeliveries } from './service.ts';

describe('webhook address policy', () => {
  it('refuses private, loopback, link-local and reserved addresses, mapped forms included', () => {
    for (const a of [
      '10.1.2.3',
      '127.0.0.1',
      '169.254.169.254',
      '172.20.0.1',
      '192.168.1.1',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::10.0.0.1',
    ])
      expect(isPublicAddress(a), a).toBe(false);
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isPublicAddress(a), a).toBe(true);
  });

  it('takes https on public hosts; http and https to loopback only in development', () => {
    expect(checkWebhookUrl('https://hooks.example.com/palmid', false).ok).toBe(true);
    expect(checkWebhookUrl('http://hooks.example.com/palmid', false)).toMatchObject({
      reason: 'https_required',
    });
    expect(checkWebhookUrl('http://hooks.example.com/palmid', true)).toMatchObject({
      reason: 'https_required',
    });
    expect(checkWebhookUrl('https://10.0.0.1/x', false)).toMatchObject({ reason: 'private_address' });
    expect(checkWebhookUrl('https://[fe80::1]/x', true)).toMatchObject({ reason: 'private_address' });
    expect(checkWebhookUrl('https://localhost/x', false)).toMatchObject({ reason: 'private_address' });
    expect(checkWebhookUrl('http://127.0.0.1:9000/x', false)).toMatchObject({ ok: false });
    expect(checkWebhookUrl('http://127.0.0.1:9000/x', true).ok).toBe(true);
    expect(checkWebhookUrl('http://localhost:9000/x', true).ok).toBe(true);
    expect(checkWebhookUrl('https://user:pw@hooks.example.com/', false)).toMatchObject({
      reason: 'credentials_in_url',
    });
    expect(checkWebhookUrl('not a url', false)).toMatchObject({ reason: 'invalid_url' });
  });

  it('checks the resolved address at send time (a name for loopback is refused outside development)', async () => {
    await expect(resolveTarget(new URL('https://localhost/x'), false)).rejects.toThrow(/non-public/);
    await expect(resolveTarget(new URL('http://localhost/x'), true)).resolves.toMatchObject({
      address: expect.stringMatching(/^(127\.|::1)/),
    });
    await expect(resolveTarget(new URL('https://192.168.0.1/x'), true)).rejects.toThrow(/non-public/);
  });

  it('backs off exponentially with jitter, capped', () => {
    expect(backoff(1, 10_000, 3600_000, () => 1)).toBe(10_000);
    expect(backoff(1, 10_000, 3600_000, () => 0)).toBe(5_000);
    expect(backoff(4, 10_000, 3600_000, () => 1)).toBe(80_000);
    expect(backoff(30, 10_000, 3600_000, () => 1)).toBe(3600_000);
  });
});

describe('webhook endpoints (REST)', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('registers, shows the secret once, lists, deletes; refuses unknown events and other vendors', async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' });
    const v = await seedVendor(t.ctx);
    const other = await seedVendor(t.ctx, 'Other');
    const call = (key: string, method: string, url: string, payload?: object) =>
      t!.app.inject({
        method: method as 'GET',
        url,
        headers: { 'x-api-key': key },
        ...(payload ? { payload } : {}),
      });

    const local = await call(v.api_key, 'POST', '/api/v1/webhooks', { url: 'http://127.0.0.1:9/x' });
    expect(local.statusCode).toBe(400); // the loopback exception is development's only
    expect(local.json().error.details).toEqual({ field: 'url', reason: 'https_required' });
    const unknown = await call(v.api_key, 'POST', '/api/v1/webhooks', {
      url: 'https://hooks.example.com/p',
      events: ['auth.deleted'],
    });
    expect(unknown.json().error.details).toEqual({ field: 'events', reason: 'unknown_event' });

    const made = await call(v.api_key, 'POST', '/api/v1/webhooks', { url: 'https://hooks.example.com/p' });
    expect(made.statusCode).toBe(201);
    const { id, secret, events } = made.json().data;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(events).toEqual(['auth.created', 'auth.updated']);
    // the secret is sealed at rest
    const raw = await t.ctx.database.db.selectFrom('webhook_endpoints').selectAll().executeTakeFirstOrThrow();
    expect(Buffer.from(raw.secret_enc).toString('latin1')).not.toContain(secret);

    const list = await call(v.api_key, 'GET', '/api/v1/webhooks');
    expect(list.json().data.webhooks).toEqual([
      { id, url: 'https://hooks.example.com/p', events, created_at: expect.any(String) },
    ]);
    expect((await call(other.api_key, 'GET', '/api/v1/webhooks')).json().data.webhooks).toEqual([]);
    expect((await call(other.api_key, 'DELETE', `/api/v1/webhooks/${id}`)).statusCode).toBe(404);
    expect((await call(v.api_key, 'DELETE', `/api/v1/webhooks/${id}`)).json().data).toEqual({
      id,
      deleted: true,
    });
    expect((await call(v.api_key, 'DELETE', `/api/v1/webhooks/${id}`)).statusCode).toBe(404);
    expect((await call(v.api_key, 'GET', '/api/v1/webhooks')).json().data.webhooks).toEqual([]);
  });

  it('queues one delivery per event in the transaction of the change; none without endpoints', async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' });
    const v = await seedVendor(t.ctx);
    const call = (method: string, url: string, payload?: object) =>
      t!.app.inject({
        method: method as 'GET',
        url,
        headers: { 'x-api-key': v.api_key },
        ...(payload ? { payload } : {}),
      });
    await call('POST', '/api/v1/auth/create', { auth_context: { type: 'login' } });
    const count = async () =>
      (await t!.ctx.database.db.selectFrom('webhook_deliveries').select('id').execute()).length;
    expect(await count()).toBe(0);
    await call('POST', '/api/v1/webhooks', { url: 'https://hooks.example.com/a', events: ['auth.updated'] });
    await call('POST', '/api/v1/webhooks', { url: 'https://hooks.example.com/b' });
    const id = (await call('POST', '/api/v1/auth/create', { auth_context: { type: 'login' } })).json().data
      .auth_id;
    expect(await count()).toBe(1); // auth.created: only endpoint b takes it
    await call('POST', `/api/v1/auth/${id}/cancel`);
    expect(await count()).toBe(3);
    const log = (await call('GET', `/api/v1/webhooks/deliveries?auth_id=${id}`)).json().data.deliveries;
    expect(log.map((d: { type: string; state: string }) => [d.type, d.state])).toEqual([
      ['auth.updated', 'pending'],
      ['auth.updated', 'pending'],
      ['auth.created', 'pending'],
    ]);
    const replay = await call('POST', `/api/v1/webhooks/deliveries/${log[2].id}/replay`);
    expect(replay.statusCode).toBe(201);
    expect(replay.json().data).toMatchObject({
      event_id: log[2].event_id,
      replay_of: log[2].id,
      state: 'pending',
    });
    expect((await call('POST', '/api/v1/webhooks/deliveries/whd_nope/replay')).statusCode).toBe(404);
    // the log keeps finished deliveries 30 days; pending ones stay until sent or given up
    const db = t.ctx.database.db;
    await db
      .updateTable('webhook_deliveries')
      .set({ state: 'delivered' })
      .where('id', '=', log[2].id)
      .execute();
    const later = Date.now() + 31 * 86_400_000;
    expect(await pruneDeliveries(db, Date.now())).toBe(0);
    expect(await pruneDeliveries(db, later)).toBe(1);
    expect(await count()).toBe(3);
  });
});
