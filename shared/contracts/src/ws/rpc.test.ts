import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseFrame } from './frames.ts';
import type { pvsMethods } from './pvs.ts';
import { keepAlive, RpcClient, RpcError } from './rpc.ts';

describe('RpcClient', () => {
  afterEach(() => vi.useRealTimers());

  it('waits for the link, sends again after a drop with the same id, and settles by id', async () => {
    let n = 0;
    const rpc = new RpcClient<typeof pvsMethods>(() => `id-${++n}`);
    const sent: string[] = [];
    const call = rpc.call('heartbeat', { uptime_s: 1 });
    expect(sent).toEqual([]);
    rpc.attach((t) => sent.push(t));
    rpc.detach();
    rpc.attach((t) => sent.push(t));
    expect(sent.map((t) => JSON.parse(t))).toEqual([
      { id: 'id-1', method: 'heartbeat', params: { uptime_s: 1 } },
      { id: 'id-1', method: 'heartbeat', params: { uptime_s: 1 } },
    ]);
    expect(rpc.handle(parseFrame(JSON.stringify({ id: 'other', result: {} })))).toBe(false);
    expect(rpc.handle(parseFrame(JSON.stringify({ id: 'id-1', result: { time: 't' } })))).toBe(true);
    await expect(call).resolves.toEqual({ time: 't' });
  });

  it('rejects with the server error, on timeout and when stopped', async () => {
    vi.useFakeTimers();
    const rpc = new RpcClient<typeof pvsMethods>();
    rpc.attach(() => {});
    const refused = rpc.call('heartbeat', {}, { id: 'a' });
    rpc.handle(
      parseFrame(
        JSON.stringify({ id: 'a', error: { code: 'FORBIDDEN', message: 'no', details: { reason: 'x' } } }),
      ),
    );
    await expect(refused).rejects.toMatchObject({ code: 'FORBIDDEN', details: { reason: 'x' } });
    const silent = rpc.call('heartbeat', {}, { timeoutMs: 100 });
    vi.advanceTimersByTime(101);
    await expect(silent).rejects.toMatchObject({ code: 'TIMEOUT' });
    const pending = rpc.call('heartbeat', {});
    rpc.rejectAll(new RpcError('STOPPED', 'stopped'));
    await expect(pending).rejects.toBeInstanceOf(RpcError);
  });
});

describe('keepAlive', () => {
  it('pings, keeps a peer that answers, drops one that goes silent, and stops on close', () => {
    vi.useFakeTimers();
    const socket = Object.assign(new EventEmitter(), { ping: vi.fn(), terminate: vi.fn() });
    keepAlive(socket, 1000);
    vi.advanceTimersByTime(1000);
    expect(socket.ping).toHaveBeenCalledTimes(1);
    socket.emit('pong');
    vi.advanceTimersByTime(1000);
    expect(socket.terminate).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1000);
    expect(socket.terminate).toHaveBeenCalledTimes(1);
    socket.emit('close');
    vi.advanceTimersByTime(5000);
    expect(socket.ping).toHaveBeenCalledTimes(2);
    vi.useRealTimers();
  });
});
