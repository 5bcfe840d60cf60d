import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { z } from 'zod';
import type { FirmwareSimulator } from './device.ts';
import { faultSchema } from './faults.ts';
import { presentationSchema } from './presentation.ts';

/**
 * A loopback HTTP control port for the simulator: the "hand" of tests and demos. It stands for what a
 * person does at a real scanner (present or withdraw a palm, hold up a photo) and what a technician
 * does to hardware (pull the cable, cause line noise).
 *
 *   POST /present      {identity, hand, attack?}   a palm is held over the sensor
 *   POST /remove                                   the palm is withdrawn
 *   POST /auto-present {identity, hand, attack?} | {off: true}   who walks up when a capture starts
 *   POST /fault        {kind, …}                   inject a fault (see faults.ts)
 *   POST /clear-faults
 *   POST /unplug       {ms}                        unplug for ms (0 = until /replug)
 *   POST /replug
 *   GET  /state                                    the device's state as JSON
 *   GET  /captures                                 the last captures' timings (CaptureRecord[])
 */
const autoSchema = z.union([presentationSchema, z.object({ off: z.literal(true) }).strict()]);
const unplugSchema = z.object({ ms: z.number().int().min(0).max(600_000).default(0) }).strict();

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > 64 * 1024) throw new Error('body too large');
    chunks.push(c as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : {};
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export interface ControlEndpoint {
  port: number;
  url: string;
  close(): Promise<void>;
}

export async function listenControl(
  sim: FirmwareSimulator,
  port = 0,
  host = '127.0.0.1',
): Promise<ControlEndpoint> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      try {
        const path = (req.url ?? '/').split('?')[0];
        if (req.method === 'GET' && path === '/state') return send(res, 200, sim.snapshot());
        if (req.method === 'GET' && path === '/captures') return send(res, 200, sim.captures());
        if (req.method !== 'POST') return send(res, 404, { error: 'unknown endpoint' });
        const body = await readJson(req);
        switch (path) {
          case '/present':
            sim.present(presentationSchema.parse(body));
            break;
          case '/remove':
            sim.remove();
            break;
          case '/auto-present': {
            const a = autoSchema.parse(body);
            sim.setAutoPresent('off' in a ? false : a);
            break;
          }
          case '/fault':
            sim.injectFault(faultSchema.parse(body));
            break;
          case '/clear-faults':
            sim.clearFaults();
            break;
          case '/unplug':
            sim.unplug(unplugSchema.parse(body).ms);
            break;
          case '/replug':
            sim.replug();
            break;
          default:
            return send(res, 404, { error: 'unknown endpoint' });
        }
        return send(res, 200, { ok: true });
      } catch (err) {
        const message =
          err instanceof z.ZodError
            ? (err.issues[0]?.message ?? 'invalid body')
            : err instanceof Error
              ? err.message
              : 'bad request';
        return send(res, 400, { error: message });
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as { port: number }).port;
  return {
    port: bound,
    url: `http://${host}:${bound}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
