import { connect, type Socket } from 'node:net';
import { errorBodySchema } from '@palmid/contracts/envelope';
import { buildApp, HTTP_TIMEOUTS } from '@palmid/server/app';
import { createTestApp, FrameClient, seedUser, type TestApp, TestDevice } from '@palmid/server/dev/testing';
import { LOCK_MS, MAX_FAILURES } from '@palmid/server/modules/lockouts/service';
import { createPvs } from '@palmid/server/modules/pvs/service';
import { createVendor } from '@palmid/server/modules/vendors/service';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

/**
 * Abuse over real sockets: rate limits under 200 concurrent clients, kiosk lockout after repeated failed
 * matches, oversized WebSocket frames, slow-loris headers and bodies, oversized headers.
 */
const abuseFigures: Record<string, unknown> = {};

describe('abuse', () => {
  let t: TestApp;
  let base: string;
  let clock = Date.now();
  let vendor: { vendor_id: string; api_key: string };

  beforeAll(async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' }, () => clock);
    vendor = await createVendor(t.ctx.database.db, { name: 'Abuse Cafe' });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await t?.close();
    if (process.env.RELIABILITY_FIGURES) console.log(`ABUSE ${JSON.stringify(abuseFigures)}`);
  });

  const burst = async (n: number, req: () => Promise<Response>) => {
    const res = await Promise.all(Array.from({ length: n }, req));
    const statuses = res.map((r) => r.status);
    for (const r of res) {
      if (r.status === 429) {
        expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(errorBodySchema.parse(await r.json()).error.code).toBe('RATE_LIMITED');
      } else await r.arrayBuffer();
    }
    return {
      admitted: statuses.filter((s) => s !== 429).length,
      refused: statuses.filter((s) => s === 429).length,
    };
  };

  it('200 concurrent clients never get more than the limit admitted (per key, per token, per IP)', async () => {
    const from = Math.floor(Date.now() / 1000) - 60;
    const ledger = await burst(200, () =>
      fetch(`${base}/api/v1/ledger/transactions/${'a'.repeat(64)}?from=${from}`, {
        headers: { 'x-api-key': vendor.api_key },
      }),
    );
    expect(ledger.admitted).toBe(50);
    const status = await burst(200, () =>
      fetch(`${base}/api/v1/status`, { headers: { 'x-api-key': vendor.api_key } }),
    );
    expect(status.admitted).toBe(100);
    const user = await seedUser(t.ctx);
    const attrs = await burst(200, () =>
      fetch(`${base}/v1/attributes`, { headers: { authorization: `Bearer ${user.token}` } }),
    );
    expect(attrs.admitted).toBe(60);
    // claim-code guessing: POST /v1/session is limited per client IP
    const session = await burst(200, () =>
      fetch(`${base}/v1/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ claim_code: 'AAAAA-BBBBB' }),
      }),
    );
    expect(session.admitted).toBe(10);
    const users = await burst(200, () =>
      fetch(`${base}/api/v1/mpc/users/read`, {
        method: 'POST',
        headers: { 'x-api-key': vendor.api_key, 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: crypto.randomUUID() }),
      }),
    );
    expect(users.admitted).toBe(50);
    abuseFigures.rate_limits = { clients: 200, ledger, status, attrs, session, users };
  }, 60_000);

  it(`a kiosk is locked after ${MAX_FAILURES} failed matches and unlocks after ${LOCK_MS / 1000} s`, async () => {
    const kiosk = await createPvs(t.ctx.database.db, { name: 'abuse kiosk', vendorId: vendor.vendor_id });
    const k = await FrameClient.open(`${base.replace('http', 'ws')}/ws/pvs`, {
      authorization: `Bearer ${kiosk.device_token}`,
    });
    const device = new TestDevice(kiosk.pvs_id);
    await k.hello('h', device, { provisioning_secret: kiosk.provisioning_secret });
    // attested captures, signed at the server's (test) clock
    const call = async (id: string, auth_id: string) =>
      (await k.identify(id, device, { auth_id, template: stranger, capturedAt: clock })) as {
        result?: { status: string; success: boolean; reason?: string };
        error?: { code: string; details: Record<string, unknown> };
      };
    const newContext = async () => {
      const r = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/create',
        headers: { 'x-api-key': vendor.api_key, 'content-type': 'application/json' },
        payload: JSON.stringify({
          auth_context: { type: 'login', pvs_id: kiosk.pvs_id, expires_in_s: 3600 },
        }),
      });
      return r.json().data.auth_id as string;
    };
    const stranger = Buffer.from('not-an-enrolled-palm').toString('base64');
    const identify = async (n: string) => call(n, await newContext());
    for (let i = 0; i < MAX_FAILURES; i++) expect((await identify(`f${i}`)).result?.reason).toBe('no_match');
    const locked = await identify('locked');
    expect(locked.error?.code).toBe('RATE_LIMITED');
    expect(locked.error?.details.reason).toBe('kiosk_locked');
    // reconnecting does not clear the lock
    clock += LOCK_MS - 1000;
    expect((await identify('still')).error?.details.reason).toBe('kiosk_locked');
    clock += 2000;
    expect((await identify('after')).result?.reason).toBe('no_match');
    // concurrent failures cannot slip past the counter: a burst of 20 parallel attempts is cut at the limit
    clock += LOCK_MS + 1000;
    const ids = await Promise.all(Array.from({ length: 20 }, () => newContext()));
    const burstAnswers = await Promise.all(ids.map((auth_id, i) => call(`b${i}`, auth_id)));
    const matched = burstAnswers.filter((a) => a.result).length;
    abuseFigures.lockout = {
      max_failures: MAX_FAILURES,
      lock_s: LOCK_MS / 1000,
      burst_of_20_admitted: matched,
    };
    expect(matched).toBeLessThanOrEqual(MAX_FAILURES);
    k.close();
  }, 60_000);

  it('a WebSocket frame over 64 KiB closes the connection (1009); the server keeps serving', async () => {
    const ws = new WebSocket(`${base.replace('http', 'ws')}/ws/vendor`, {
      headers: { 'x-api-key': vendor.api_key },
    });
    await new Promise((r) => ws.once('open', r));
    const closed = new Promise<number>((r) => ws.once('close', (c) => r(c)));
    ws.send('x'.repeat(64 * 1024 + 1));
    expect(await closed).toBe(1009);
    const ok = new WebSocket(`${base.replace('http', 'ws')}/ws/vendor`, {
      headers: { 'x-api-key': vendor.api_key },
    });
    await new Promise((r) => ok.once('open', r));
    const pong = new Promise<{ result?: { pong: boolean } }>((r) =>
      ok.once('message', (d) => r(JSON.parse(d.toString()))),
    );
    ok.send(JSON.stringify({ id: 'p', method: 'ping', params: {} }));
    expect((await pong).result?.pong).toBe(true);
    ok.close();
  });

  it('the server has slow-loris deadlines set', () => {
    expect(t.app.server.headersTimeout).toBe(HTTP_TIMEOUTS.headersTimeout);
    expect(t.app.server.requestTimeout).toBe(HTTP_TIMEOUTS.requestTimeout);
    expect(t.app.server.keepAliveTimeout).toBe(HTTP_TIMEOUTS.keepAliveTimeout);
  });

  describe('slow clients are cut off (deadlines shortened for the test)', () => {
    let fast: Awaited<ReturnType<typeof buildApp>>;
    let port: number;
    beforeAll(async () => {
      fast = await buildApp(t.ctx, {
        timeouts: { headersTimeout: 1000, requestTimeout: 2000, connectionsCheckingInterval: 200 },
      });
      await fast.listen({ port: 0, host: '127.0.0.1' });
      port = (fast.server.address() as { port: number }).port;
    });
    afterAll(async () => {
      await fast?.close();
    });

    const trickle = (lines: string[], everyMs: number) =>
      new Promise<{ closedAfterMs: number; response: string; linesSent: number }>((resolve) => {
        const started = Date.now();
        const socket: Socket = connect(port, '127.0.0.1');
        let response = '';
        let i = 0;
        const timer = setInterval(() => {
          if (i < lines.length && !socket.destroyed) socket.write(lines[i++]!);
        }, everyMs);
        socket.on('data', (d) => {
          response += d.toString();
        });
        socket.on('error', () => undefined);
        socket.on('close', () => {
          clearInterval(timer);
          resolve({ closedAfterMs: Date.now() - started, response, linesSent: i });
        });
      });

    it('headers sent one line every 300 ms', async () => {
      const lines = [
        'GET /health HTTP/1.1\r\n',
        ...Array.from({ length: 100 }, (_, i) => `X-Slow-${i}: a\r\n`),
      ];
      const r = await trickle(lines, 300);
      // the server hung up long before the client ran out of header lines (a figure, not a bound: the time)
      expect(r.linesSent).toBeLessThan(lines.length / 4);
      abuseFigures.slowloris_headers_cut_ms = r.closedAfterMs;
    }, 20_000);

    it('a body sent one byte every 300 ms', async () => {
      const head =
        'POST /v1/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n';
      const r = await trickle([head, ...Array.from({ length: 500 }, () => ' ')], 300);
      // cut off long before the 500 bytes were all sent
      expect(r.linesSent).toBeLessThan(500 / 4);
      abuseFigures.slowloris_body_cut_ms = r.closedAfterMs;
    }, 20_000);

    it('oversized headers get a 400 error envelope', async () => {
      const r = await trickle(
        [`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
        10,
      );
      expect(r.response).toMatch(/^HTTP\/1.1 400/);
      const body = r.response.slice(r.response.indexOf('\r\n\r\n') + 4);
      expect(errorBodySchema.parse(JSON.parse(body)).error.details.reason).toBe('headers_too_large');
    }, 20_000);

    it('a malformed request line gets a 400 error envelope', async () => {
      const r = await trickle(['BREW /coffee HTCPCP/1.0\r\n\r\n'], 10);
      expect(r.response).toMatch(/^HTTP\/1.1 400/);
      const body = r.response.slice(r.response.indexOf('\r\n\r\n') + 4);
      expect(errorBodySchema.safeParse(JSON.parse(body)).success).toBe(true);
    }, 20_000);
  });
});
