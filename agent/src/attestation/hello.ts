import { randomUUID } from 'node:crypto';
import { parseFrame } from '@palmid/contracts/ws/frames';
import WebSocket from 'ws';

export type HelloAnswer =
  | { ok: true; result: { device_key?: string; pvs_id?: string; vendor_id?: string | null } }
  | { ok: false; code: string; reason?: string; message: string };

/**
 * One `hello` on /ws/pvs and nothing else (mode `check` takes no requests): how `agent register` binds the
 * device key and how `agent doctor` asks whether the server accepts it.
 */
export function helloOnce(
  serverUrl: string,
  deviceToken: string,
  params: Record<string, unknown>,
  timeoutMs = 5000,
): Promise<HelloAnswer> {
  return new Promise((resolve) => {
    const url = new URL('/ws/pvs', serverUrl.replace(/^http/, 'ws'));
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${deviceToken}` },
      handshakeTimeout: timeoutMs,
    });
    const id = `hello-${randomUUID()}`;
    let settled = false;
    const done = (a: HelloAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.close(1000);
      resolve(a);
    };
    const timer = setTimeout(
      () => done({ ok: false, code: 'TIMEOUT', message: `no answer within ${timeoutMs} ms` }),
      timeoutMs,
    );
    ws.on('open', () => ws.send(JSON.stringify({ id, method: 'hello', params })));
    ws.on('message', (data) => {
      const f = parseFrame(data.toString());
      if (f.kind !== 'response' || f.id !== id) return;
      if (f.error)
        done({
          ok: false,
          code: f.error.code,
          message: f.error.message,
          ...(typeof f.error.details?.reason === 'string' ? { reason: f.error.details.reason } : {}),
        });
      else done({ ok: true, result: (f.result ?? {}) as { device_key?: string } });
    });
    ws.on('close', (code, reason) =>
      done({
        ok: false,
        code: code === 1008 ? 'UNAUTHORIZED' : 'CLOSED',
        message: `connection closed (${code}${reason.length > 0 ? ` ${reason.toString()}` : ''})`,
      }),
    );
    ws.on('error', (err) => done({ ok: false, code: 'UNREACHABLE', message: err.message }));
  });
}
