import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { CLOSE_POLICY, parseFrame } from '@palmid/contracts/ws/frames';
import type { pvsMethods } from '@palmid/contracts/ws/pvs';
import { type ParamsOf, type ResultOf, RpcClient, RpcError } from '@palmid/contracts/ws/rpc';
import WebSocket from 'ws';
import { closeInWords } from '../uplink/uplink.ts';

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do about it. */
  hint?: string;
}

/** Largest clock difference to the server that is still fine (token expiry, ledger timestamps). */
export const MAX_CLOCK_SKEW_MS = 5000;

export async function checkModel(path: string): Promise<CheckResult> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch {
    return {
      name: 'model',
      status: 'fail',
      detail: `${path}: file not found`,
      hint: 'set modelPath (npm run agent -- config set modelPath <file>) or restore shared/palm/models/',
    };
  }
  let ort: typeof import('onnxruntime-node');
  try {
    ort = await import('onnxruntime-node');
  } catch (err) {
    return {
      name: 'model',
      status: 'fail',
      detail: `onnxruntime-node failed to load: ${err instanceof Error ? err.message : String(err)}`,
      hint: 'reinstall dependencies (npm install) on this machine',
    };
  }
  try {
    const session = await ort.InferenceSession.create(path);
    const detail = `${path} (${(size / 1024).toFixed(0)} KiB; inputs ${session.inputNames.join(', ')}; outputs ${session.outputNames.join(', ')})`;
    await session.release();
    return { name: 'model', status: 'ok', detail };
  } catch (err) {
    return {
      name: 'model',
      status: 'fail',
      detail: `${path}: not a loadable ONNX model (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`,
      hint: 'the file is damaged or from an incompatible version; restore it from the release',
    };
  }
}

export interface ServerProbe {
  result: CheckResult;
  /** The server's Date header, and when (local clock, mid-request) it was valid. */
  serverDate?: number;
  localMidpoint?: number;
  rttMs?: number;
}

export async function checkServer(
  serverUrl: string,
  timeoutMs = 3000,
  fetchImpl: typeof fetch = fetch,
): Promise<ServerProbe> {
  const url = new URL('/health', serverUrl).toString();
  const sent = Date.now();
  let res: Response;
  try {
    res = await fetchImpl(url, {
      signal: AbortSignal.timeout(timeoutMs),
      headers: { accept: 'application/json' },
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    const why =
      (err as Error).name === 'TimeoutError'
        ? `no answer within ${timeoutMs} ms`
        : cause === 'ECONNREFUSED'
          ? 'connection refused (server not running?)'
          : cause === 'ENOTFOUND'
            ? 'host not found'
            : (err as Error).message;
    return {
      result: {
        name: 'server',
        status: 'fail',
        detail: `${url}: ${why}`,
        hint: 'start the server (npm start) or fix serverUrl (npm run agent -- config set serverUrl <url>)',
      },
    };
  }
  const received = Date.now();
  const rttMs = received - sent;
  const dateHeader = res.headers.get('date');
  const serverDate = dateHeader ? Date.parse(dateHeader) : Number.NaN;
  const timing = Number.isNaN(serverDate) ? {} : { serverDate, localMidpoint: sent + rttMs / 2, rttMs };
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  const status = (body as { status?: unknown } | undefined)?.status;
  const version = (body as { version?: unknown } | undefined)?.version;
  if (!res.ok || status !== 'ok') {
    return {
      result: {
        name: 'server',
        status: 'fail',
        detail: `${url}: HTTP ${res.status}, status ${JSON.stringify(status ?? null)} (expected "ok")`,
        hint: 'the server is up but unhealthy; check its logs',
      },
      ...timing,
    };
  }
  return {
    result: {
      name: 'server',
      status: 'ok',
      detail: `${url}: ok${typeof version === 'string' ? `, version ${version}` : ''} (${rttMs} ms)`,
    },
    ...timing,
  };
}

/** Clock skew from the server's Date header (1 s resolution, so up to 1 s + rtt/2 is noise). */
export function checkClock(probe: ServerProbe, maxSkewMs = MAX_CLOCK_SKEW_MS): CheckResult {
  if (probe.serverDate === undefined || probe.localMidpoint === undefined) {
    return {
      name: 'clock',
      status: 'skip',
      detail:
        probe.result.status === 'fail'
          ? 'skipped: server unreachable'
          : 'skipped: server sent no Date header',
    };
  }
  // Date truncates to the second: the true server time lies in [date, date + 1 s).
  const skew = probe.serverDate + 500 - probe.localMidpoint;
  const slack = 500 + (probe.rttMs ?? 0) / 2;
  const magnitude = Math.max(0, Math.abs(skew) - slack);
  const words = `${(Math.abs(skew) / 1000).toFixed(1)} s ${skew > 0 ? 'behind' : 'ahead of'} the server`;
  if (magnitude > maxSkewMs) {
    return {
      name: 'clock',
      status: 'fail',
      detail: `this machine's clock is ${words} (limit ${maxSkewMs / 1000} s)`,
      hint: 'enable time sync: sudo timedatectl set-ntp true',
    };
  }
  return {
    name: 'clock',
    status: 'ok',
    detail: `within ${Math.ceil((Math.abs(skew) + slack) / 1000)} s of the server`,
  };
}

const TOKEN_HINT =
  'npm run admin -- pvs create --name <kiosk> (on the server), then npm run agent -- config set pvsId <id> and config set deviceToken <token>';

/** An open, authenticated kiosk session on /ws/pvs that one more check can use (e.g. the device key). */
export interface KioskSession {
  /** The server's answer to hello. */
  hello: ResultOf<PvsMethods, 'hello'>;
  call<K extends keyof PvsMethods & string>(
    method: K,
    params: ParamsOf<PvsMethods, K>,
    timeoutMs?: number,
  ): Promise<ResultOf<PvsMethods, K>>;
}
type PvsMethods = typeof pvsMethods;
export type SessionCheck = (session: KioskSession) => Promise<CheckResult>;

/**
 * Logs in to the server as this kiosk the way `agent run` does (device token on /ws/pvs, then hello),
 * but in enrolment mode so that no authentication context is delivered to it; reports whether the
 * server accepts the token and the pvsId, and which vendor the kiosk serves. `more` run on the same
 * session (one CheckResult each), e.g. a device-key check.
 */
export async function checkKioskLogin(
  serverUrl: string,
  creds: { pvsId?: string | undefined; deviceToken?: string | undefined },
  opts: {
    timeoutMs?: number;
    serverReachable?: boolean;
    hello?: Record<string, unknown>;
    more?: SessionCheck[];
  } = {},
): Promise<CheckResult[]> {
  const more = opts.more ?? [];
  const skipped = (why: string): CheckResult[] =>
    more.map(() => ({ name: 'session', status: 'skip', detail: why }));
  if (!creds.deviceToken)
    return [
      {
        name: 'token',
        status: 'warn',
        detail: 'no device token: the kiosk cannot log in to the server',
        hint: TOKEN_HINT,
      },
      ...skipped('skipped: no device token'),
    ];
  if (!creds.pvsId)
    return [
      { name: 'token', status: 'fail', detail: 'deviceToken is set but pvsId is not', hint: TOKEN_HINT },
      ...skipped('skipped: no pvsId'),
    ];
  if (opts.serverReachable === false)
    return [
      { name: 'token', status: 'skip', detail: 'skipped: server unreachable' },
      ...skipped('skipped: server unreachable'),
    ];
  const timeoutMs = opts.timeoutMs ?? 3000;
  const url = new URL('/ws/pvs', serverUrl.replace(/^http/, 'ws'));
  const ws = new WebSocket(url, {
    headers: { authorization: `Bearer ${creds.deviceToken}` },
    handshakeTimeout: timeoutMs,
  });
  const rpc = new RpcClient<PvsMethods>(() => `doctor-${randomUUID()}`);
  let closed: { code: number; reason: string } | undefined;
  ws.on('message', (data) => {
    rpc.handle(parseFrame(data.toString()));
  });
  ws.on('error', () => undefined);
  const closedPromise = new Promise<void>((resolve) =>
    ws.on('close', (code, reason) => {
      closed = { code, reason: reason.toString() };
      rpc.detach();
      rpc.rejectAll(new RpcError('CLOSED', 'closed'));
      resolve();
    }),
  );
  const call: KioskSession['call'] = (method, params, ms = timeoutMs) =>
    rpc.call(method, params, { timeoutMs: ms });
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('close', () => reject(new Error('closed')));
      ws.once('error', reject);
    });
    rpc.attach((text) => ws.send(text));
    const hello = await call('hello', {
      agent_version: 'doctor',
      firmware: 'unknown',
      model: 'doctor',
      ...opts.hello,
      pvs_id: creds.pvsId,
      mode: 'enrol',
    });
    const token: CheckResult = {
      name: 'token',
      status: 'ok',
      detail: `the server accepts this kiosk (${creds.pvsId}); ${hello.vendor_id ? `it serves vendor ${hello.vendor_id}` : 'unbound: it enrols users and serves every vendor'}`,
    };
    const session: KioskSession = { hello, call };
    const extra: CheckResult[] = [];
    for (const check of more) extra.push(await check(session));
    return [token, ...extra];
  } catch (err) {
    if (!closed) await Promise.race([closedPromise, new Promise((r) => setTimeout(r, 200))]);
    const code = (err as { code?: string }).code;
    let result: CheckResult;
    if (closed?.code === CLOSE_POLICY && closed.reason === 'too_many_failures')
      result = {
        name: 'token',
        status: 'fail',
        detail:
          'the server blocks this address after repeated wrong credentials (close 1008 too_many_failures)',
        hint: 'wait a few minutes, fix deviceToken, then run doctor once',
      };
    else if (closed?.code === CLOSE_POLICY)
      result = {
        name: 'token',
        status: 'fail',
        detail: `the server refused the device token (close 1008 ${closed.reason || 'unauthorized'}): wrong, revoked, or from another server`,
        hint: TOKEN_HINT,
      };
    else if (code === 'FORBIDDEN')
      result = {
        name: 'token',
        status: 'fail',
        detail: `the server refused pvsId ${creds.pvsId}: ${(err as Error).message}`,
        hint: 'pvsId and deviceToken must come from the same npm run admin -- pvs create',
      };
    else
      result = {
        name: 'token',
        status: 'fail',
        detail: `could not log in to ${url}: ${
          closed
            ? `the server closed the link (${closeInWords(closed.code, closed.reason)})`
            : (err as Error).message
        }`,
        hint: 'check serverUrl and that the server is a palmid server of a compatible version',
      };
    return [result, ...skipped('skipped: the kiosk could not log in')];
  } finally {
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) {
      ws.close(1000, 'doctor done');
      await Promise.race([closedPromise, new Promise((r) => setTimeout(r, 1000))]);
    }
  }
}
