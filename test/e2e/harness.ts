import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FrameClient, TestDevice } from '@palmid/server/dev/testing';
import WebSocket from 'ws';

/**
 * Cross-process harness: the real server, firmware simulator and agent as separate processes on
 * loopback, driven through their public interfaces (HTTP, WebSocket, CLI, the simulator's control port).
 */
const ROOT = new URL('../../', import.meta.url).pathname;

export interface Proc {
  child: ChildProcess;
  output: string[];
  stdout: string[];
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function start(script: string, args: string[], env: Record<string, string> = {}, name = script): Proc {
  // node --import tsx (not the tsx wrapper): a signal, SIGKILL included, reaches the program itself.
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const stdout: string[] = [];
  const waiters: { re: RegExp; resolve: (m: RegExpExecArray) => void }[] = [];
  const onData = (chunk: Buffer, isStdout: boolean) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      output.push(line);
      if (isStdout) stdout.push(line);
      if (process.env.E2E_VERBOSE) process.stderr.write(`[${name}] ${line}\n`);
      for (const w of [...waiters]) {
        const m = w.re.exec(line);
        if (m) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    }
  };
  child.stdout?.on('data', (c: Buffer) => onData(c, true));
  child.stderr?.on('data', (c: Buffer) => onData(c, false));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    output,
    stdout,
    waitFor(re, timeoutMs = 30_000) {
      for (const line of output) {
        const m = re.exec(line);
        if (m) return Promise.resolve(m);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${name}: timed out waiting for ${re}\n${output.slice(-20).join('\n')}`)),
          timeoutMs,
        );
        waiters.push({
          re,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

/** Runs a CLI to completion and returns stdout (throws with its output on a non-zero exit). */
export async function run(
  script: string,
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<string> {
  const p = start(script, args, env);
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    new Promise<number | null>((r) => p.child.once('exit', (c) => r(c))),
    new Promise<never>((_, rej) => {
      timer = setTimeout(() => rej(new Error(`${script} ${args.join(' ')} timed out`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
  if (code !== 0) throw new Error(`${script} ${args.join(' ')} exited ${code}:\n${p.output.join('\n')}`);
  return p.stdout.join('\n');
}

/** Runs a CLI to its end as a process (asynchronously: the test's own sockets keep being served meanwhile). */
export function cli(
  script: string,
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, script), ...args],
      { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: timeoutMs },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

export function lastJson<T>(text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    // several lines: take the last one that parses
  }
  const lines = text.split('\n').filter((l) => l.trim().startsWith('{'));
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      return JSON.parse(lines[i]!) as T;
    } catch {
      // a log line that only looks like JSON
    }
  }
  throw new Error(`no JSON in output:\n${text}`);
}

export function tempDir(prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A synthetic `<dir>/<subject>/<image>` set of cropped contact ROIs (two sessions of two samples per
 * subject, files `<session>_<sample>.<format>`), made by `palm-lab/scripts/make-roi-set.ts` as a process.
 */
export async function makeRoiSet(
  dir: string,
  subjects: number,
  format: 'png' | 'bmp',
  seed: string,
): Promise<void> {
  const made = await cli(
    'palm-lab/scripts/make-roi-set.ts',
    [
      dir,
      '--style',
      'contact',
      '--subjects',
      String(subjects),
      '--per-session',
      '2',
      '--format',
      format,
      '--seed',
      seed,
    ],
    {},
    120_000,
  );
  if (made.code !== 0) throw new Error(`make-roi-set exited ${made.code}: ${made.stderr}`);
}

/** Files `from`'s second session under a new label `to`: one palm under two labels (look-alike identities). */
export function refileSecondSession(set: string, from: string, to: string): void {
  mkdirSync(join(set, to));
  for (const f of readdirSync(join(set, from)).filter((f) => f.startsWith('2_')))
    renameSync(join(set, from, f), join(set, to, f));
}

export interface ServerEnv {
  PORT: string;
  DATABASE_URL: string;
  PALMID_KEY_FILE: string;
  PALMID_ENV: string;
  [name: string]: string;
}

/**
 * The environment of a server process on its own SQLite file and master key inside `dir` (a sandbox
 * deployment on an ephemeral port); `extra` adds or overrides variables.
 */
export function sqliteServerEnv(dir: string, extra: Record<string, string> = {}): ServerEnv {
  return {
    PORT: '0',
    DATABASE_URL: `sqlite:${dir}/palmid.db`,
    PALMID_KEY_FILE: `${dir}/master.key`,
    PALMID_ENV: 'sandbox',
    ...extra,
  };
}

export interface ServerProc extends Proc {
  base: string;
  port: number;
}

export async function startServer(env: Record<string, string>): Promise<ServerProc> {
  const p = start('server/src/main.ts', [], { PALMID_SIM: '0', PALMID_LOG_LEVEL: 'info', ...env }, 'server');
  const m = await p.waitFor(/palmid listening on (http:\/\/[\d.]+:(\d+))/);
  return Object.assign(p, { base: m[1]!, port: Number(m[2]) });
}

export interface SimProc extends Proc {
  device: string;
  control: string;
  present(body: unknown): Promise<void>;
  autoPresent(body: unknown): Promise<void>;
  post(path: string, body?: unknown): Promise<void>;
}

export async function startSim(args: string[] = []): Promise<SimProc> {
  const p = start(
    'firmware-sim/src/cli.ts',
    ['--tcp', '0', '--control', '0', '--no-auto-present', ...args],
    {},
    'sim',
  );
  const control = (await p.waitFor(/control ready: (http:\/\/\S+)/))[1]!;
  const device = (await p.waitFor(/device ready: (tcp:\S+)/))[1]!;
  const post = async (path: string, body: unknown = {}) => {
    const res = await fetch(`${control}${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    if (!res.ok) throw new Error(`sim ${path}: ${res.status} ${await res.text()}`);
  };
  return Object.assign(p, {
    device,
    control,
    post,
    present: (body: unknown) => post('/present', body),
    autoPresent: (body: unknown) => post('/auto-present', body),
  });
}

/** Environment of an `agent` process that serves `kiosk` from the simulator `sim` against `serverUrl`. */
export function kioskAgentEnv(
  configFile: string,
  sim: Pick<SimProc, 'device'>,
  serverUrl: string,
  kiosk: { pvs_id: string; device_token: string; provisioning_secret?: string },
): Record<string, string> {
  return {
    PALMID_AGENT_CONFIG: configFile,
    PALMID_DEVICE: sim.device,
    PALMID_SERVER_URL: serverUrl,
    PALMID_PVS_ID: kiosk.pvs_id,
    PALMID_DEVICE_TOKEN: kiosk.device_token,
    // the agent's first hello registers the key it makes beside configFile (docs/kiosk-install.md)
    ...(kiosk.provisioning_secret ? { PALMID_PROVISIONING_SECRET: kiosk.provisioning_secret } : {}),
  };
}

/**
 * A capture device (kiosk or integrator host from `admin pvs create`) whose key this test holds: the key is
 * bound the way the agent binds it, with `hello` and the provisioning secret over a real /ws/pvs socket.
 */
export async function bindDevice(
  serverUrl: string,
  kiosk: { pvs_id: string; device_token: string; provisioning_secret: string },
): Promise<TestDevice> {
  const device = new TestDevice(kiosk.pvs_id);
  const c = await FrameClient.open(`${serverUrl.replace(/^http/, 'ws')}/ws/pvs`, {
    authorization: `Bearer ${kiosk.device_token}`,
  });
  try {
    const r = await c.hello('bind', device, {
      provisioning_secret: kiosk.provisioning_secret,
      mode: 'check',
    });
    if ((r.result as { device_key?: string } | undefined)?.device_key !== 'bound')
      throw new Error(`device key not bound: ${JSON.stringify(r)}`);
  } finally {
    c.close();
  }
  return device;
}

export async function api<T = { data: Record<string, unknown> }>(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; token?: string; body?: unknown } = {},
): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = {};
  if (opts.key) headers['x-api-key'] = opts.key;
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** Creates an auth context as the vendor (`POST /api/v1/auth/create`) and returns its auth_id. */
export async function createAuthContext(
  base: string,
  apiKey: string,
  authContext: Record<string, unknown>,
): Promise<string> {
  const res = await api(base, 'POST', '/api/v1/auth/create', {
    key: apiKey,
    body: { auth_context: authContext },
  });
  if (res.status !== 201) throw new Error(`auth/create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.data.auth_id as string;
}

/** A vendor socket collecting `auth.updated` notifications. */
export class VendorSocket {
  readonly updates: { auth_id: string; status: string; auth_result?: Record<string, unknown> }[] = [];
  readonly ws: WebSocket;
  #waiters: {
    pred: (u: VendorSocket['updates'][number]) => boolean;
    resolve: (u: VendorSocket['updates'][number]) => void;
  }[] = [];

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (d) => {
      const f = JSON.parse(d.toString()) as { method?: string; params?: VendorSocket['updates'][number] };
      if (f.method !== 'auth.updated' || !f.params) return;
      this.updates.push(f.params);
      for (const w of [...this.#waiters]) {
        if (w.pred(f.params)) {
          this.#waiters.splice(this.#waiters.indexOf(w), 1);
          w.resolve(f.params);
        }
      }
    });
  }

  static async open(base: string, key: string): Promise<VendorSocket> {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws/vendor`, { headers: { 'x-api-key': key } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new VendorSocket(ws);
  }

  until(authId: string, statuses: string[], timeoutMs = 30_000): Promise<VendorSocket['updates'][number]> {
    const pred = (u: VendorSocket['updates'][number]) => u.auth_id === authId && statuses.includes(u.status);
    const found = this.updates.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no ${statuses.join('|')} for ${authId}; saw ${JSON.stringify(this.updates.filter((u) => u.auth_id === authId))}`,
            ),
          ),
        timeoutMs,
      );
      this.#waiters.push({
        pred,
        resolve: (u) => {
          clearTimeout(timer);
          resolve(u);
        },
      });
    });
  }

  close(): void {
    this.ws.close();
  }
}
