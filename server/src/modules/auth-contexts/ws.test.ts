import { VENDOR_AUTH_DEADLINE_MS } from '@palmid/contracts/ws/vendor';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import WebSocket from 'ws';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';

type Frame = Record<string, unknown>;

/** Opens a socket the way a browser does: no X-API-Key header. */
async function openBrowserLike(url: string) {
  const ws = new WebSocket(url);
  const frames: Frame[] = [];
  const waiters: { pred: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];
  ws.on('message', (d) => {
    const f = JSON.parse(d.toString()) as Frame;
    const w = waiters.find((x) => x.pred(f));
    if (w) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(f);
    } else frames.push(f);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = (pred: (f: Frame) => boolean) => {
    const found = frames.find(pred);
    if (found) {
      frames.splice(frames.indexOf(found), 1);
      return Promise.resolve(found);
    }
    return new Promise<Frame>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('timed out waiting for a frame')), 3000);
      waiters.push({
        pred,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
      });
    });
  };
  const send = (frame: unknown) => ws.send(JSON.stringify(frame));
  return { ws, next, send, closed };
}

describe('/ws/vendor first-frame authentication (browsers)', () => {
  let t: TestApp;
  let url: string;
  let vendor: { vendor_id: string; api_key: string };

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    url = `ws://127.0.0.1:${(t.app.server.address() as { port: number }).port}/ws/vendor`;
    vendor = await seedVendor(t.ctx, 'Browser Vendor');
  });
  afterAll(() => t.close());

  it('accepts the key in an auth frame, then serves subscribe, ping and auth.updated', async () => {
    const c = await openBrowserLike(url);
    c.send({ id: 'a1', method: 'auth', params: { api_key: vendor.api_key } });
    const authed = await c.next((f) => f.id === 'a1');
    expect(authed.result).toEqual({ vendor_id: vendor.vendor_id, name: 'Browser Vendor', mode: 'test' });

    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': vendor.api_key },
      payload: { auth_context: { type: 'payment', amount: 250 } },
    });
    const authId = created.json().data.auth_id as string;
    c.send({ id: 's1', method: 'subscribe', params: { auth_id: authId } });
    expect((await c.next((f) => f.id === 's1')).result).toMatchObject({ auth_id: authId, status: 'pending' });

    await t.app.inject({
      method: 'POST',
      url: `/api/v1/auth/${authId}/cancel`,
      headers: { 'x-api-key': vendor.api_key },
    });
    const update = await c.next((f) => f.method === 'auth.updated');
    expect(update.params).toMatchObject({ auth_id: authId, status: 'cancelled' });
    c.ws.close();
  });

  it('answers frames sent right behind the auth frame, in order', async () => {
    const c = await openBrowserLike(url);
    c.send({ id: 'a1', method: 'auth', params: { api_key: vendor.api_key } });
    c.send({ id: 'p1', method: 'ping', params: {} });
    expect((await c.next((f) => f.id === 'a1')).result).toMatchObject({ vendor_id: vendor.vendor_id });
    expect((await c.next((f) => f.id === 'p1')).result).toMatchObject({ pong: true });
    c.ws.close();
  });

  it('refuses a wrong key with UNAUTHORIZED and closes with 1008', async () => {
    const c = await openBrowserLike(url);
    c.send({ id: 'a1', method: 'auth', params: { api_key: 'sk_test_nope' } });
    const refused = await c.next((f) => f.id === 'a1');
    expect(refused.error).toMatchObject({ code: 'UNAUTHORIZED', details: { field: 'api_key' } });
    expect(await c.closed).toEqual({ code: 1008, reason: 'unauthorized' });
  });

  it('closes with 1008 when the first frame is anything but auth', async () => {
    const c = await openBrowserLike(url);
    c.send({ id: 'p1', method: 'ping', params: {} });
    const refused = await c.next((f) => f.id === 'p1');
    expect(refused.error).toMatchObject({ code: 'UNAUTHORIZED', details: { reason: 'auth_required' } });
    expect((await c.closed).code).toBe(1008);
  });

  it('a wrong key in the X-API-Key header still closes at once (the header path is unchanged)', async () => {
    const ws = new WebSocket(url, { headers: { 'x-api-key': 'sk_test_nope' } });
    const closed = await new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    expect(closed).toBe(1008);
  });

  it('closes a silent connection at the deadline, not before', async () => {
    // The deadline runs on a fake clock; sockets and the rest of the server stay on real I/O.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const c = await openBrowserLike(url);
    let closed = false;
    void c.closed.then(() => {
      closed = true;
    });
    // the server arms its deadline when it takes the connection, a few I/O turns after the client's 'open'
    // (vi.waitFor would move the fake clock, so wait on real turns)
    for (let i = 0; i < 1000 && vi.getTimerCount() === 0; i++) await new Promise((r) => setImmediate(r));
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(VENDOR_AUTH_DEADLINE_MS - 1);
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    expect(c.ws.readyState).toBe(WebSocket.OPEN);
    await vi.advanceTimersByTimeAsync(1);
    expect(await c.closed).toEqual({ code: 1008, reason: 'auth_timeout' });
  });
});
