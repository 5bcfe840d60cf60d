import { randomUUID } from 'node:crypto';
import { VENDOR_AUTH_DEADLINE_MS } from '@palmid/contracts/ws/vendor';
import { createTestApp, type TestApp } from '@palmid/server/dev/testing';
import { SOCKETS_PER_CREDENTIAL } from '@palmid/server/lib/live-sockets';
import { RATE_LIMITS } from '@palmid/server/lib/rate-limits';
import { UNAUTHENTICATED_PER_IP } from '@palmid/server/modules/auth-contexts/ws';
import { createPvs } from '@palmid/server/modules/pvs/service';
import { createVendor } from '@palmid/server/modules/vendors/service';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openKiosk, Recorder } from './sockets.ts';

/**
 * Sockets are bounded (docs/websocket.md): a `/ws/vendor` socket that has not authenticated within 5 s is
 * closed; at most 20 sockets per vendor key and 2 per kiosk; `subscribe` counts against the key's
 * auth-route limit (100/min). Real sockets on a listening server.
 */
const PER_KEY = SOCKETS_PER_CREDENTIAL.api_key;
const PER_KIOSK = SOCKETS_PER_CREDENTIAL.pvs;
const AUTH_LIMIT = RATE_LIMITS.auth[0].points;

/** Lets the server act on what is already in flight (an over-limit socket is closed right after opening). */
const settle = () => new Promise((r) => setTimeout(r, 300));

describe('bounded sockets', () => {
  let t: TestApp;
  let base: string;
  let wsBase: string;
  const opened: Recorder[] = [];
  const open = async (path: string, headers: Record<string, string>) => {
    const r = await Recorder.open(`${wsBase}${path}`, headers);
    opened.push(r);
    return r;
  };

  beforeAll(async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    wsBase = base.replace(/^http/, 'ws');
  });
  afterAll(async () => {
    for (const r of opened) r.ws.terminate();
    await t?.close();
  });

  it(`a vendor key holds at most ${PER_KEY} sockets (header and auth-frame alike); a closed one frees its place`, async () => {
    const v = await createVendor(t.ctx.database.db, { name: 'Many Sockets' });
    const socks: Recorder[] = [];
    for (let i = 0; i < PER_KEY - 1; i++) socks.push(await open('/ws/vendor', { 'x-api-key': v.api_key }));
    const byFrame = await open('/ws/vendor', {});
    expect((await byFrame.call('a', 'auth', { api_key: v.api_key })).result).toBeDefined();
    socks.push(byFrame);
    const over = await open('/ws/vendor', { 'x-api-key': v.api_key });
    expect(await over.whenClosed()).toMatchObject({ code: 1008, reason: 'too_many_sockets' });
    const overByFrame = await open('/ws/vendor', {});
    overByFrame.ws.send(JSON.stringify({ id: 'b', method: 'auth', params: { api_key: v.api_key } }));
    expect(await overByFrame.whenClosed()).toMatchObject({ code: 1008, reason: 'too_many_sockets' });
    await settle();
    expect(socks.every((s) => s.closed === undefined)).toBe(true);
    // every admitted socket is served
    expect((await socks[0]!.call('p', 'ping', {})).result).toMatchObject({ pong: true });

    socks[0]!.ws.close();
    await socks[0]!.whenClosed();
    await settle();
    const again = await open('/ws/vendor', { 'x-api-key': v.api_key });
    await settle();
    expect(again.closed).toBeUndefined();
    // another key of another vendor is not affected
    const other = await createVendor(t.ctx.database.db, { name: 'Other' });
    const otherSock = await open('/ws/vendor', { 'x-api-key': other.api_key });
    await settle();
    expect(otherSock.closed).toBeUndefined();
  });

  it(`a kiosk holds at most ${PER_KIOSK} sockets`, async () => {
    const kiosk = await createPvs(t.ctx.database.db, { name: 'Till' });
    const first = await openKiosk(wsBase, kiosk);
    const second = await openKiosk(wsBase, kiosk);
    const third = await open('/ws/pvs', { authorization: `Bearer ${kiosk.device_token}` });
    expect(await third.whenClosed()).toMatchObject({ code: 1008, reason: 'too_many_sockets' });
    await settle();
    expect(first.closed).toBeUndefined();
    expect(second.closed).toBeUndefined();
    first.ws.close();
    second.ws.close();
  });

  it(`subscribe counts against the key's auth-route limit (${AUTH_LIMIT}/min), shared with REST`, async () => {
    const v = await createVendor(t.ctx.database.db, { name: 'Subscriber' });
    const s = await open('/ws/vendor', { 'x-api-key': v.api_key });
    for (let i = 0; i < AUTH_LIMIT; i++) {
      const r = await s.call(`s${i}`, 'subscribe', { auth_id: randomUUID() });
      expect(r.error?.code, `subscribe ${i + 1}`).toBe('NOT_FOUND');
    }
    const limited = await s.call('over', 'subscribe', { auth_id: randomUUID() });
    expect(limited.error).toMatchObject({ code: 'RATE_LIMITED', details: { reason: 'rate_limited' } });
    const rest = await fetch(`${base}/api/v1/auth/create`, {
      method: 'POST',
      headers: { 'x-api-key': v.api_key, 'content-type': 'application/json' },
      body: JSON.stringify({ auth_context: { type: 'login' } }),
    });
    expect(rest.status).toBe(429);
    expect(s.closed).toBeUndefined();
  });

  it(`unauthenticated /ws/vendor sockets are closed after ${VENDOR_AUTH_DEADLINE_MS / 1000} s; one address holds at most ${UNAUTHENTICATED_PER_IP}`, async () => {
    const silent: Recorder[] = [];
    for (let i = 0; i < 100; i++) silent.push(await open('/ws/vendor', {}));
    const closed = await Promise.all(silent.map((s) => s.whenClosed(VENDOR_AUTH_DEADLINE_MS + 5000)));
    // the first ones wait their 5 s; every one past the address's budget is closed at once
    for (const c of closed.slice(0, UNAUTHENTICATED_PER_IP))
      expect(c).toMatchObject({ code: 1008, reason: 'auth_timeout' });
    for (const c of closed.slice(UNAUTHENTICATED_PER_IP))
      expect(c).toMatchObject({ code: 1008, reason: 'too_many_sockets' });
    // their places are free again: a new socket from the address authenticates
    const v = await createVendor(t.ctx.database.db, { name: 'After the flood' });
    const late = await open('/ws/vendor', {});
    expect((await late.call('a', 'auth', { api_key: v.api_key })).result).toBeDefined();
  }, 20_000);

  it(`a socket that authenticates frees its address's place: ${UNAUTHENTICATED_PER_IP + 5} authenticated sockets from one address`, async () => {
    // two vendors' keys, so that no key reaches its own socket limit
    const keys = [
      (await createVendor(t.ctx.database.db, { name: 'Browser tabs' })).api_key,
      (await createVendor(t.ctx.database.db, { name: 'More tabs' })).api_key,
    ];
    const tabs: Recorder[] = [];
    for (let i = 0; i < UNAUTHENTICATED_PER_IP + 5; i++) {
      const s = await open('/ws/vendor', {});
      expect((await s.call(`a${i}`, 'auth', { api_key: keys[i % 2] })).result, `tab ${i}`).toBeDefined();
      tabs.push(s);
    }
    await settle();
    expect(tabs.every((s) => s.closed === undefined)).toBe(true);
  });
});
