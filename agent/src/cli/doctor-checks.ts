import { stat } from 'node:fs/promises';

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
      hint: 'set modelPath (npm run agent -- config set modelPath <file>) or restore agent/models/',
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

export function checkToken(token: string | undefined): CheckResult {
  return token
    ? { name: 'token', status: 'ok', detail: 'device token configured' }
    : {
        name: 'token',
        status: 'warn',
        detail: 'no device token: the kiosk cannot log in to the server',
        hint: 'npm run admin -- pvs create --name <kiosk>, then npm run agent -- config set deviceToken <token>',
      };
}
