import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { verifySignature } from '@palmid/contracts/webhooks';
import { afterAll, describe, expect, it } from 'vitest';
import {
  api,
  cli,
  type Proc,
  type ServerProc,
  sqliteServerEnv,
  start,
  startServer,
  tempDir,
} from './harness.ts';

/**
 * Signed webhooks through the real processes (docs/vendor-api.md, "Webhooks"): the server, a receiver
 * process that fails its first requests, a server killed while deliveries are pending and started again on
 * the same database, the delivery log and `npm run vendor -- webhooks replay`, and the documented
 * openssl/shell verification run on a delivery as received.
 */
interface Received {
  n: number;
  status: number;
  signature: string | null;
  event_id: string | null;
  body: string;
}

function received(p: Proc): Received[] {
  return p.stdout.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Received);
}

async function until(probe: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const ROOT = new URL('../../', import.meta.url).pathname;

/** The shell verification snippet of docs/vendor-api.md, as published. */
function shellSnippet(): string {
  const doc = readFileSync(join(ROOT, 'docs/vendor-api.md'), 'utf8');
  const m = /<!-- webhook-verify-sh -->\s*```sh\n([\s\S]*?)```/.exec(doc);
  if (!m) throw new Error('docs/vendor-api.md has no webhook-verify-sh snippet');
  return m[1]!;
}

describe('signed webhooks, end to end', () => {
  const tmp = tempDir('palmid-webhooks-');
  const env = sqliteServerEnv(tmp.dir, {
    PALMID_ENV: 'development',
    PALMID_WEBHOOK_RETRY_BASE_MS: '300',
    PALMID_WEBHOOK_POLL_MS: '100',
  });
  let server: ServerProc | undefined;
  let receiver: Proc | undefined;
  afterAll(async () => {
    await server?.stop();
    await receiver?.stop();
    tmp.remove();
  });

  it('delivers every event signed, in order per context, through failures and a restart; logs and replays', async () => {
    receiver = start('test/support/webhook-receiver.ts', [], { FAIL_FIRST: '5' }, 'receiver');
    const hookUrl = (await receiver.waitFor(/receiver listening (\S+)/))[1]!;
    server = await startServer(env);
    const key = (await server.waitFor(/vendor key:\s+(sk_test_\S+)/, 60_000))[1]!;

    // private and non-https URLs are refused; http:// loopback is the development exception
    for (const url of ['http://example.com/hook', 'https://10.0.0.7/hook', 'https://169.254.169.254/x']) {
      const bad = await api<{ error: { details: { field: string } } }>(
        server.base,
        'POST',
        '/api/v1/webhooks',
        {
          key,
          body: { url },
        },
      );
      expect(bad.status, url).toBe(400);
      expect(bad.body.error.details.field).toBe('url');
    }
    const created = await api<{ data: { id: string; secret: string; events: string[] } }>(
      server.base,
      'POST',
      '/api/v1/webhooks',
      { key, body: { url: hookUrl } },
    );
    expect(created.status).toBe(201);
    const secret = created.body.data.secret;
    expect(secret).toMatch(/^whsec_/);
    const listed = await api<{ data: { webhooks: Record<string, unknown>[] } }>(
      server.base,
      'GET',
      '/api/v1/webhooks',
      { key },
    );
    expect(listed.body.data.webhooks).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const c = await api<{ data: { auth_id: string } }>(server.base, 'POST', '/api/v1/auth/create', {
        key,
        body: { auth_context: { type: 'login' } },
      });
      ids.push(c.body.data.auth_id);
    }
    // the receiver fails its first 5 requests; once it has refused some, the server dies (SIGKILL)
    await until(() => received(receiver!).length >= 2, 20_000, 'first attempts');
    await server.stop('SIGKILL');
    // the cancellations are queued by the restarted server, behind the creations still pending
    server = await startServer(env);
    for (const id of ids) {
      const res = await api(server.base, 'POST', `/api/v1/auth/${id}/cancel`, { key });
      expect(res.status).toBe(200);
    }
    const delivered = () => received(receiver!).filter((r) => r.status === 200);
    // a delivery in flight when the server died waits for its lease (30 s) to run out
    await until(() => delivered().length >= 4, 75_000, 'four delivered events');

    const events = delivered().map((r) => ({ ...r, event: JSON.parse(r.body) }));
    // every request is signed over its raw body, with a fresh timestamp
    for (const r of received(receiver))
      expect(verifySignature(secret, r.body, r.signature ?? undefined)).toBe(true);
    expect(verifySignature(`${secret}x`, events[0]!.body, events[0]!.signature ?? undefined)).toBe(false);
    for (const id of ids) {
      const mine = events.filter((e) => e.event.data.auth_id === id);
      // in order per context: created first, then the cancellation with its result
      expect(mine.map((e) => [e.event.type, e.event.data.status])).toEqual([
        ['auth.created', 'pending'],
        ['auth.updated', 'cancelled'],
      ]);
      expect(mine[1]!.event.data.auth_result.reason).toBe('cancelled');
      expect(mine[0]!.event).toMatchObject({
        id: expect.stringMatching(/^evt_/),
        created: expect.any(Number),
      });
    }

    // the delivery log shows the retries
    const log = await api<{ data: { deliveries: { id: string; state: string; attempts: number }[] } }>(
      server.base,
      'GET',
      '/api/v1/webhooks/deliveries',
      { key },
    );
    expect(log.status).toBe(200);
    expect(log.body.data.deliveries).toHaveLength(4);
    expect(log.body.data.deliveries.every((d) => d.state === 'delivered')).toBe(true);
    expect(Math.max(...log.body.data.deliveries.map((d) => d.attempts))).toBeGreaterThan(1);

    // replay through the vendor CLI: the same event id arrives again
    const first = log.body.data.deliveries.at(-1)!;
    const before = delivered().length;
    const replay = await cli(
      'server/src/cli/vendor.ts',
      ['webhooks', 'replay', first.id, '--url', server.base],
      {
        PALMID_API_KEY: key,
      },
    );
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toMatch(/replaying: .*whd_/);
    await until(() => delivered().length > before, 10_000, 'the replay');
    const again = JSON.parse(delivered().at(-1)!.body) as { id: string };
    const original = events.find((e) => e.event_id === again.id);
    expect(original, 'replay keeps the event id').toBeDefined();

    // the CLIs: the vendor's list finds the server through PORT (no --url); the operator adds an endpoint
    const listed2 = await cli('server/src/cli/vendor.ts', ['webhooks', 'list'], {
      PALMID_API_KEY: key,
      PORT: String(server.port),
      PALMID_URL: '',
    });
    expect(listed2.code, listed2.stderr).toBe(0);
    expect(listed2.stdout).toContain(hookUrl);
    const vendorId = (await server.waitFor(/demo vendor:\s+(\S+)/))[1]!;
    const admin = (...args: string[]) => cli('server/src/cli/admin.ts', args, env);
    const refused = await admin('vendor', 'webhook', 'add', vendorId, '--url', 'https://192.168.1.10/hook');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/public address/);
    const added = await admin(
      '--json',
      'vendor',
      'webhook',
      'add',
      vendorId,
      '--url',
      'https://hooks.example.com/p',
    );
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({
      url: 'https://hooks.example.com/p',
      secret: expect.stringMatching(/^whsec_/),
    });

    // the documented openssl/shell check accepts a delivery as received and refuses a tampered one
    const snippet = shellSnippet();
    const body = join(tmp.dir, 'body.json');
    const check = (sig: string) =>
      new Promise<{ code: number; out: string }>((resolve) =>
        execFile(
          'sh',
          ['-c', snippet],
          { env: { ...process.env, SECRET: secret, SIG: sig, BODY: body } },
          (err, out) => resolve({ code: err ? Number(err.code ?? 1) : 0, out }),
        ),
      );
    const sample = events[0]!;
    writeFileSync(body, sample.body);
    expect(await check(sample.signature!)).toMatchObject({ code: 0, out: expect.stringMatching(/valid/) });
    writeFileSync(body, sample.body.replace('pending', 'completed'));
    expect((await check(sample.signature!)).code).not.toBe(0);
  }, 240_000);
});
