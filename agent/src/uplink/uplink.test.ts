import type { MethodMap } from '@palmid/contracts/ws/rpc';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { closeInWords, Uplink, UplinkError } from './uplink.ts';

async function fakeServer(
  onRequest: (
    frame: { id: string; method: string; params: unknown },
    reply: (f: unknown) => void,
    drop: () => void,
  ) => void,
) {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  const seen: { id: string; method: string; auth: string | undefined }[] = [];
  wss.on('connection', (ws, req) => {
    ws.on('message', (d) => {
      const f = JSON.parse(d.toString()) as { id: string; method: string; params: unknown };
      seen.push({ id: f.id, method: f.method, auth: req.headers.authorization });
      if (f.method === 'hello') {
        ws.send(JSON.stringify({ id: f.id, result: { pvs_id: 'p' } }));
        return;
      }
      onRequest(
        f,
        (r) => ws.send(JSON.stringify(r)),
        () => ws.terminate(),
      );
    });
  });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const port = () => (wss.address() as { port: number }).port;
  const close = () =>
    new Promise<void>((r) => {
      for (const c of wss.clients) c.terminate();
      wss.close(() => r());
    });
  return { wss, seen, port, close };
}

describe('Uplink', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('re-sends an in-flight request with the same id after the link drops', async () => {
    let drops = 0;
    const srv = await fakeServer((f, reply, drop) => {
      if (f.method === 'identify' && drops === 0) {
        drops += 1;
        drop();
        return;
      }
      reply({ id: f.id, result: { ok: true, echo: f.id } });
    });
    cleanups.push(srv.close);
    const up = new Uplink<MethodMap>({
      serverUrl: `http://127.0.0.1:${srv.port()}`,
      deviceToken: 'pvs_x',
      hello: () => ({ pvs_id: 'p' }),
      backoff: { baseMs: 10, capMs: 50 },
    });
    cleanups.push(() => up.stop());
    up.start();
    const res = (await up.call('identify', { a: 1 }, { id: 'req-1', timeoutMs: 5000 })) as { echo: string };
    expect(res.echo).toBe('req-1');
    expect(srv.seen.filter((s) => s.method === 'identify').map((s) => s.id)).toEqual(['req-1', 'req-1']);
    expect(srv.seen.filter((s) => s.method === 'hello')).toHaveLength(2);
    expect(srv.seen[0]!.auth).toBe('Bearer pvs_x');
    expect(up.connections).toBe(2);
  });

  it('says each close in words: a dropped link and a too-many-failures refusal', async () => {
    let n = 0;
    const srv = await fakeServer((f, reply, drop) => {
      if (f.method === 'ping' && n++ === 0) return drop();
      reply({ id: f.id, result: { ok: true } });
    });
    cleanups.push(srv.close);
    const lines: string[] = [];
    const up = new Uplink<MethodMap>({
      serverUrl: `http://127.0.0.1:${srv.port()}`,
      deviceToken: 'pvs_x',
      hello: () => ({ pvs_id: 'p' }),
      backoff: { baseMs: 10, capMs: 50 },
      log: (l) => lines.push(l),
    });
    cleanups.push(() => up.stop());
    up.start();
    await up.call('ping', {}, { timeoutMs: 5000 });
    expect(lines.find((l) => l.startsWith('link closed'))).toMatch(
      /^link closed \(1006: connection lost \(network, or the server stopped without closing\)\); reconnecting in \d+ ms$/,
    );
    expect(closeInWords(1008, 'too_many_failures')).toBe(
      '1008 too_many_failures: too many refused logins from this address; the server waits before it listens again',
    );
    expect(closeInWords(1001, '')).toBe('1001: the server is going away (restart or shutdown)');
    expect(closeInWords(4321, 'odd')).toBe('4321 odd: closed');
  });

  it('rejects with the server error and times out when nobody answers', async () => {
    const srv = await fakeServer((f, reply) => {
      if (f.method === 'bad')
        reply({ id: f.id, error: { code: 'INVALID_REQUEST', message: 'nope', details: { field: 'x' } } });
    });
    cleanups.push(srv.close);
    const up = new Uplink<MethodMap>({
      serverUrl: `http://127.0.0.1:${srv.port()}`,
      deviceToken: 't',
      hello: () => ({}),
    });
    cleanups.push(() => up.stop());
    up.start();
    await expect(up.call('bad', {})).rejects.toMatchObject({
      code: 'INVALID_REQUEST',
      details: { field: 'x' },
    });
    await expect(up.call('silent', {}, { timeoutMs: 200 })).rejects.toBeInstanceOf(UplinkError);
  });

  it('queues events while offline, bounded, and flushes them on connect', async () => {
    const srv = await fakeServer((f, reply) => reply({ id: f.id, result: {} }));
    const port = srv.port();
    await srv.close();
    const up = new Uplink<MethodMap>({
      serverUrl: `http://127.0.0.1:${port}`,
      deviceToken: 't',
      hello: () => ({}),
      queueLimit: 3,
      backoff: { baseMs: 10, capMs: 30 },
    });
    cleanups.push(() => up.stop());
    up.start();
    for (let i = 0; i < 5; i++) up.event('heartbeat', { n: i });
    expect(up.queued).toBe(3);
    const again = new WebSocketServer({ port, host: '127.0.0.1' });
    const got: number[] = [];
    again.on('connection', (ws) =>
      ws.on('message', (d) => {
        const f = JSON.parse(d.toString());
        if (f.method === 'heartbeat') got.push(f.params.n);
        ws.send(JSON.stringify({ id: f.id, result: {} }));
      }),
    );
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          for (const c of again.clients) c.terminate();
          again.close(() => r());
        }),
    );
    await new Promise<void>((resolve) => up.once('connected', () => resolve()));
    // the three kept events arrive, oldest dropped first, in order (waited for, not slept on)
    await expect.poll(() => got.length, { timeout: 10_000 }).toBe(3);
    expect(got).toEqual([2, 3, 4]);
    expect(up.queued).toBe(0);
  });
});
