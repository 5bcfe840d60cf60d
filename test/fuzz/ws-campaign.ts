import { MAX_FRAME_BYTES, responseFrameSchema } from '@palmid/contracts/ws/frames';
import { pvsMethods } from '@palmid/contracts/ws/pvs';
import { vendorMethods } from '@palmid/contracts/ws/vendor';
import { createPvs } from '@palmid/server/modules/pvs/service';
import fc from 'fast-check';
import WebSocket from 'ws';
import { z } from 'zod';
import { fromSchema, hostile, type JsonSchema, mutate } from './arbitraries.ts';
import { withFuzzApp } from './rest-campaign.ts';

/**
 * Fuzzing of every WebSocket method of /ws/pvs and /ws/vendor over real sockets. Params come from the zod
 * schemas in shared/contracts/src/ws (via z.toJSONSchema), then get one node replaced by a hostile value; raw frames
 * (garbage, binary, wrong shapes, unknown methods, stray responses) are mixed in. Each fuzz frame is followed
 * by a barrier request: every frame received up to the barrier's answer must be a valid response or a known
 * notification, no error may be INTERNAL_ERROR, and the socket must stay open.
 */
export interface WsFuzzFigures {
  methods: number;
  frames: number;
  errors: Record<string, number>;
}

class Client {
  readonly inbox: unknown[] = [];
  #waiters: (() => void)[] = [];
  closed: { code: number; reason: string } | undefined;
  constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      this.inbox.push(JSON.parse(d.toString()));
      for (const w of this.#waiters.splice(0)) w();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      for (const w of this.#waiters.splice(0)) w();
    });
  }
  static async open(url: string, headers: Record<string, string>): Promise<Client> {
    const ws = new WebSocket(url, { headers, maxPayload: 4 * MAX_FRAME_BYTES });
    const c = new Client(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return c;
  }
  /** Sends a frame, then a barrier request; returns every frame that arrived up to the barrier's answer. */
  async exchange(
    frame: string | Buffer,
    barrier: { method: string; params: unknown },
    n: number,
  ): Promise<unknown[]> {
    const start = this.inbox.length;
    this.ws.send(frame, { binary: Buffer.isBuffer(frame) });
    const id = `barrier-${n}`;
    this.ws.send(JSON.stringify({ id, ...barrier }));
    const deadline = Date.now() + 5000;
    for (;;) {
      const got = this.inbox.slice(start);
      if (got.some((f) => (f as { id?: unknown }).id === id)) return got;
      if (this.closed)
        throw new Error(`socket closed ${JSON.stringify(this.closed)} after ${String(frame).slice(0, 200)}`);
      if (Date.now() > deadline) throw new Error(`no barrier answer after ${String(frame).slice(0, 200)}`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
}

const rawFrames = fc.oneof(
  fc.constantFrom(
    '',
    '{',
    'null',
    '[]',
    '"x"',
    '{"id":"a"}',
    '{"id":"","method":"heartbeat"}',
    '{"id":"a b","method":"heartbeat"}',
    '{"id":"a","method":""}',
    '{"id":"a","method":"__proto__"}',
    '{"id":"a","method":"constructor"}',
    '{"id":"a","method":"toString"}',
    '{"id":"a","method":"hasOwnProperty"}',
    '{"id":"a","method":"scan.request","params":{}}',
    '{"id":"a","result":{}}',
    '{"id":"a","error":{"code":"X"}}',
    '{"method":"auth.updated","params":{}}',
    '{"id":"a","method":"ping","params":[]}',
    '{"id":"a","method":"ping","params":null}',
    '{"id":"a","method":"ping","params":{"__proto__":{"x":1}}}',
    '{"id":{"$gt":""},"method":"ping"}',
  ),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.uint8Array({ maxLength: 100 }).map((b) => Buffer.from(b)),
  fc.integer({ min: 500, max: 5000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
  fc.constant('x'.repeat(MAX_FRAME_BYTES - 10)),
);

function frameArb(
  methods: Record<string, { params: z.ZodType }>,
): fc.Arbitrary<{ kind: string; frame: string | Buffer }> {
  const perMethod = Object.entries(methods).map(([method, spec]) => {
    const schema = z.toJSONSchema(spec.params, { unrepresentable: 'any', io: 'input' }) as JsonSchema;
    return fc
      .record({
        params: fromSchema(schema),
        hostile,
        pick: fc.nat(),
        mutateIt: fc.boolean(),
        id: fc.stringMatching(/^[A-Za-z0-9._:-]{1,64}$/),
      })
      .map(({ params, hostile: h, pick, mutateIt, id }) => ({
        kind: mutateIt ? `${method}:mutated` : `${method}:valid`,
        frame:
          JSON.stringify({ id: `f-${id}`, method, params: mutateIt ? mutate(params, pick, h) : params }) ??
          'null',
      }));
  });
  // Frames over the 64 KiB limit close the socket by design (test/security/abuse.test.ts covers that).
  return fc
    .oneof(
      ...perMethod,
      rawFrames.map((frame) => ({ kind: 'raw', frame })),
    )
    .filter((f) => Buffer.byteLength(f.frame) <= MAX_FRAME_BYTES);
}

function checkFrames(frames: unknown[], figures: WsFuzzFigures, notifications: string[]): string | null {
  for (const f of frames) {
    const obj = f as { id?: unknown; method?: unknown; error?: { code?: string } };
    if (typeof obj.method === 'string' && !('id' in obj)) {
      if (!notifications.includes(obj.method)) return `unexpected notification ${obj.method}`;
      continue;
    }
    const parsed = responseFrameSchema.safeParse(f);
    if (!parsed.success) return `not a response frame: ${JSON.stringify(f).slice(0, 300)}`;
    if (obj.error) {
      figures.errors[obj.error.code ?? '?'] = (figures.errors[obj.error.code ?? '?'] ?? 0) + 1;
      if (obj.error.code === 'INTERNAL_ERROR') return `INTERNAL_ERROR: ${JSON.stringify(f)}`;
      if (/\n\s+at |\.ts:\d+|SqliteError|TypeError/.test(JSON.stringify(f)))
        return `leak: ${JSON.stringify(f)}`;
    }
  }
  return null;
}

export async function runWsFuzz(opts: { runsPerChannel: number; seed?: number }): Promise<WsFuzzFigures> {
  return withFuzzApp(async (t, creds) => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const base = address.replace(/^http/, 'ws');
    const kiosk = await createPvs(t.ctx.database.db, { name: 'fuzz kiosk' });
    const figures: WsFuzzFigures = {
      methods: Object.keys(pvsMethods).length + Object.keys(vendorMethods).length,
      frames: 0,
      errors: {},
    };
    const channels = [
      {
        name: 'pvs',
        url: `${base}/ws/pvs`,
        headers: { authorization: `Bearer ${kiosk.device_token}` },
        methods: pvsMethods,
        barrier: { method: 'heartbeat', params: {} },
        notifications: ['scan.request', 'scan.cancel'],
      },
      {
        name: 'vendor',
        url: `${base}/ws/vendor`,
        headers: { 'x-api-key': creds().vendorKey },
        methods: vendorMethods,
        barrier: { method: 'ping', params: {} },
        notifications: ['auth.updated'],
      },
    ];
    let n = 0;
    for (const ch of channels) {
      const client = await Client.open(ch.url, ch.headers);
      try {
        await fc.assert(
          fc.asyncProperty(frameArb(ch.methods), async ({ frame }) => {
            const got = await client.exchange(frame, ch.barrier, n++);
            figures.frames += 1;
            const problem = checkFrames(got, figures, ch.notifications);
            if (problem) throw new Error(`${ch.name}: ${problem} (sent ${String(frame).slice(0, 200)})`);
          }),
          {
            numRuns: opts.runsPerChannel,
            endOnFailure: true,
            ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
          },
        );
      } finally {
        client.ws.close();
      }
    }
    return figures;
  });
}
