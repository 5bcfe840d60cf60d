#!/usr/bin/env node
import { installFatalHandlers } from '@palmid/contracts/cli/fatal';
import { CLOSE_POLICY, parseFrame } from '@palmid/contracts/ws/frames';
import { keepAlive, RpcClient, RpcError } from '@palmid/contracts/ws/rpc';
import type { AuthUpdated, vendorMethods } from '@palmid/contracts/ws/vendor';
import { Command, CommanderError } from 'commander';
import WebSocket from 'ws';
import { verifyProofCommand } from './verify-proof.ts';

/**
 * Vendor-side tools (`npm run vendor -- <command>`), nothing to install beyond the repository:
 * `watch` follows your authentication contexts on `/ws/vendor` (docs/quickstart.md step 3,
 * docs/websocket.md). The key comes from `--key` or PALMID_API_KEY (better: not in the shell history).
 *
 * Exit codes: 0 ok (stopped with Ctrl-C, or --until met), 1 the server refused the key or cannot be
 * reached, 2 bad usage.
 */
installFatalHandlers('vendor');

export const EXIT = { OK: 0, FAILED: 1, USAGE: 2 } as const;

const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'expired']);

class UsageError extends Error {}

interface WatchOptions {
  url: string;
  key?: string;
  authId: string[];
  json?: boolean;
  until?: string;
}

function baseUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--url ${value}: not a URL; the server base URL, e.g. http://127.0.0.1:8080`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--url ${value}: must start with http:// or https://`);
  return url;
}

/**
 * The server's base URL when `--url` is not given: PALMID_URL, else the address `npm start` listens on
 * (`http://127.0.0.1:$PORT`, PORT defaulting to 8080, as the banner prints it).
 */
export function defaultBaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PALMID_URL) return env.PALMID_URL;
  const port = env.PORT && /^\d+$/.test(env.PORT) && env.PORT !== '0' ? env.PORT : '8080';
  const host = env.HOST && env.HOST !== '0.0.0.0' && env.HOST !== '::' ? env.HOST : '127.0.0.1';
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function apiKey(key: string | undefined): string {
  const k = key ?? process.env.PALMID_API_KEY;
  if (!k) throw new UsageError('an API key is needed: --key sk_test_… or PALMID_API_KEY');
  return k;
}

/** One REST call with the vendor key; prints the refusal and returns undefined when the server says no. */
async function call(
  base: URL,
  key: string,
  method: string,
  path: string,
  io: { err(s: string): void },
): Promise<{ data: unknown } | undefined> {
  let res: Response;
  try {
    res = await fetch(new URL(path, base), { method, headers: { 'X-API-Key': key } });
  } catch (err) {
    io.err(`cannot reach ${base.origin}: ${(err as Error).message} (is the server running? npm start)\n`);
    return undefined;
  }
  const body = (await res.json().catch(() => ({}))) as {
    data?: unknown;
    error?: { code: string; message: string };
  };
  if (!res.ok || body.data === undefined) {
    io.err(
      `${method} ${path}: HTTP ${res.status} ${body.error ? `${body.error.code}: ${body.error.message}` : ''}\n`,
    );
    return undefined;
  }
  return { data: body.data };
}

interface DeliveryLine {
  id: string;
  event_id: string;
  type: string;
  auth_id: string;
  state: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
}

function deliveryLine(d: DeliveryLine): string {
  const last =
    d.last_status !== null ? `  http=${d.last_status}` : d.last_error ? `  error=${d.last_error}` : '';
  return `${d.created_at}  ${d.id}  ${d.type}  ${d.auth_id}  ${d.state}  attempts=${d.attempts}${last}`;
}

function wsUrl(base: URL): string {
  const u = new URL('/ws/vendor', base);
  u.protocol = base.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.toString();
}

/** What `subscribe` answers and `auth.updated` carries (shared/contracts/src/ws/vendor.ts). */
type Update = AuthUpdated;

function describe(u: Update): string {
  const time = new Date().toISOString().slice(11, 19);
  let line = `${time}  ${u.auth_id}  ${u.status}`;
  if (u.reason) line += `  reason=${u.reason}`; // step_up_required: the kiosk asks for the other hand
  const r = u.auth_result;
  if (r) {
    if (r.reason) line += `  reason=${r.reason}`;
    const missing = (r as { missing?: unknown }).missing;
    if (Array.isArray(missing) && missing.length > 0) line += `  missing=${missing.join(',')}`;
    if (r.detail) line += `  detail=${r.detail}`;
    if (r.user_id) line += `  user_id=${r.user_id}`;
    if (r.ledger_id) line += `  ledger_id=${r.ledger_id}`;
    if (r.attributes && Object.keys(r.attributes).length > 0)
      line += `  attributes=${JSON.stringify(r.attributes)}`;
  }
  return line;
}

/** Follows /ws/vendor until Ctrl-C, `--until`, or a refusal; resolves to the exit code. */
async function watch(o: WatchOptions, io: { out(s: string): void; err(s: string): void }): Promise<number> {
  const key = o.key ?? process.env.PALMID_API_KEY;
  if (!key) throw new UsageError('an API key is needed: --key sk_test_… or PALMID_API_KEY');
  const target = wsUrl(baseUrl(o.url));
  return new Promise<number>((resolve) => {
    const ws = new WebSocket(target, { headers: { 'X-API-Key': key }, handshakeTimeout: 10_000 });
    // The server closes a socket with 1008 (policy) when the key is refused (docs/websocket.md).
    const rpc = new RpcClient<typeof vendorMethods>();
    let opened = false;
    let done = false;
    const finish = (code: number) => {
      if (done) return;
      done = true;
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      rpc.detach();
      rpc.rejectAll(new RpcError('STOPPED', 'the watch stopped'));
      ws.removeAllListeners('close');
      ws.on('error', () => undefined);
      ws.close();
      resolve(code);
    };
    const onSignal = () => finish(EXIT.OK);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const show = (u: Update) => {
      io.out(o.json ? `${JSON.stringify(u)}\n` : `${describe(u)}\n`);
      if (o.until && (o.until === u.auth_id || o.until === 'any') && TERMINAL.has(u.status)) finish(EXIT.OK);
    };
    ws.on('open', () => {
      opened = true;
      io.err(`watching ${target} (Ctrl-C to stop)\n`);
      keepAlive(ws);
      rpc.attach((text) => ws.send(text));
      o.authId.forEach((id, n) => {
        rpc.call('subscribe', { auth_id: id }, { id: `sub-${n}` }).then(show, (e: RpcError) => {
          if (done || e.code === 'STOPPED') return;
          io.err(e.code === 'TIMEOUT' ? `subscribe: ${e.message}\n` : `subscribe refused: ${e.message}\n`);
        });
      });
    });
    ws.on('message', (data) => {
      const frame = parseFrame(data.toString());
      if (rpc.handle(frame)) return;
      // --json prints the params as sent, so they are not passed through a (stripping) schema.
      if (frame.kind === 'notification' && frame.frame.method === 'auth.updated' && frame.frame.params)
        show(frame.frame.params as Update);
    });
    ws.on('unexpected-response', (_req, res) => {
      io.err(
        res.statusCode === 401 || res.statusCode === 403
          ? `the server refused the API key (HTTP ${res.statusCode}): check --key / PALMID_API_KEY\n`
          : `${target} answered HTTP ${res.statusCode}; is this a palmid server?\n`,
      );
      finish(EXIT.FAILED);
    });
    ws.on('error', (err: Error & { code?: string }) => {
      io.err(
        opened
          ? `connection error: ${err.message}\n`
          : `cannot reach ${target}: ${err.code ?? err.message} (is the server running? npm start)\n`,
      );
      finish(EXIT.FAILED);
    });
    ws.on('close', (code, reason) => {
      const why = reason.toString() || 'no reason given';
      if (code === CLOSE_POLICY)
        io.err(`the server refused the API key (close ${code}: ${why}): check --key / PALMID_API_KEY\n`);
      else io.err(`the server closed the connection (close ${code}: ${why})\n`);
      finish(EXIT.FAILED);
    });
  });
}

async function runVendorCli(
  argv: string[],
  io: { out(s: string): void; err(s: string): void },
): Promise<number> {
  let code: number = EXIT.OK;
  const program = new Command('vendor')
    .description('palmid vendor tools')
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', '\nExit codes: 0 ok, 1 refused or unreachable, 2 bad usage.');
  // Offline proof check (docs/zk-proofs.md); its own exit codes: 0 valid, 1 invalid, 2 unusable input.
  program.addCommand(
    verifyProofCommand((c) => {
      code = c;
    }).exitOverride(),
  );
  program
    .command('watch')
    .description('print every change of your authentication contexts as it happens (/ws/vendor)')
    .option(
      '--url <url>',
      'server base URL (default: $PALMID_URL, else http://127.0.0.1:$PORT)',
      defaultBaseUrl(),
    )
    .option('--key <api_key>', 'your API key (default: $PALMID_API_KEY)')
    .option(
      '--auth-id <id>',
      'also print the current state of this context first (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option('--until <auth_id>', "stop (exit 0) once this context, or with 'any' any context, is final")
    .option('--json', 'one JSON object per line: the auth.updated params as sent')
    .addHelpText(
      'after',
      '\nExample:\n  export PALMID_API_KEY=sk_test_…   # from the npm start banner\n  npm run vendor -- watch\n' +
        'Each line: time, auth_id, status, and once final the result (user_id, ledger_id, attributes, reason).',
    )
    .action(async (o: Omit<WatchOptions, 'url'> & { url: string }) => {
      baseUrl(o.url);
      code = await watch(o, io);
    });
  const hooks = program
    .command('webhooks')
    .description('your webhook endpoints and their delivery log (docs/vendor-api.md, "Webhooks")');
  const common = (c: Command) =>
    c
      .option(
        '--url <url>',
        'server base URL (default: $PALMID_URL, else http://127.0.0.1:$PORT)',
        defaultBaseUrl(),
      )
      .option('--key <api_key>', 'your API key (default: $PALMID_API_KEY)')
      .option('--json', 'print the JSON answer');
  common(hooks.command('list').description('list your webhook endpoints')).action(
    async (o: { url: string; key?: string; json?: boolean }) => {
      const res = await call(baseUrl(o.url), apiKey(o.key), 'GET', '/api/v1/webhooks', io);
      if (!res) {
        code = EXIT.FAILED;
        return;
      }
      const { webhooks } = res.data as { webhooks: { id: string; url: string; events: string[] }[] };
      io.out(
        o.json
          ? `${JSON.stringify(res.data)}\n`
          : `${webhooks.map((w) => `${w.id}  ${w.url}  ${w.events.join(',')}`).join('\n') || '(no endpoints)'}\n`,
      );
    },
  );
  common(
    hooks
      .command('deliveries')
      .description('the delivery log, newest first')
      .option('--auth-id <id>', 'only the deliveries about this context')
      .option('--limit <n>', 'at most this many (1-200)', '50'),
  ).action(async (o: { url: string; key?: string; json?: boolean; authId?: string; limit: string }) => {
    const q = new URLSearchParams({ limit: o.limit, ...(o.authId ? { auth_id: o.authId } : {}) });
    const res = await call(baseUrl(o.url), apiKey(o.key), 'GET', `/api/v1/webhooks/deliveries?${q}`, io);
    if (!res) {
      code = EXIT.FAILED;
      return;
    }
    const { deliveries } = res.data as { deliveries: DeliveryLine[] };
    io.out(
      o.json ? `${JSON.stringify(res.data)}\n` : `${deliveries.map(deliveryLine).join('\n') || '(none)'}\n`,
    );
  });
  common(
    hooks
      .command('replay')
      .description('send a delivery again (same event id); prints the new delivery')
      .argument('<delivery_id>', 'whd_… from `webhooks deliveries`'),
  ).action(async (id: string, o: { url: string; key?: string; json?: boolean }) => {
    const path = `/api/v1/webhooks/deliveries/${encodeURIComponent(id)}/replay`;
    const res = await call(baseUrl(o.url), apiKey(o.key), 'POST', path, io);
    if (!res) {
      code = EXIT.FAILED;
      return;
    }
    io.out(
      o.json ? `${JSON.stringify(res.data)}\n` : `replaying: ${deliveryLine(res.data as DeliveryLine)}\n`,
    );
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    if (err instanceof UsageError) {
      io.err(`vendor: ${err.message}\n`);
      return EXIT.USAGE;
    }
    io.err(`vendor: unexpected error: ${(err as Error).message}\n`);
    return EXIT.FAILED;
  }
}

process.exitCode = await runVendorCli(process.argv.slice(2), {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
});
