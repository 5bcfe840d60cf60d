/**
 * HTTP load on the main vendor routes (autocannon), side by side in one run:
 *   - a bare Fastify baseline (same process model, JSON in/out, nothing else),
 *   - palmid on SQLite, one instance,
 *   - palmid on PostgreSQL, one instance,
 *   - palmid on PostgreSQL + Redis, two instances behind a round-robin proxy on loopback
 *     (and the bare baseline behind the same proxy, to show what the proxy itself costs).
 * Ratios are req/s against the bare baseline of the same method (GET or POST).
 *
 *   npm run bench -- http                 # 5 s per route, in 5 slices interleaved with the baseline
 *   npm run bench -- http --duration 10 --connections 64 --rounds 5
 *   npm run bench -- http --quick         # 2 s per route in one slice, for a smoke run
 *   npm run bench -- http --quick --targets sqlite,postgres --routes status   # a subset (substrings)
 *
 * Every server runs in its own process; PostgreSQL and Redis are throwaway instances (test/support).
 * Targets whose dependency is missing are skipped with a note. Writes bench/results/http.json.
 *
 * Rate limits: the contract's limits (100/min per key on these routes) would turn a load test into a 429
 * test, so the bench server process builds its context with the same `RateLimits` class (memory or Redis,
 * same code path per request) but with very high budgets. This is done in this file only: there is no
 * configuration key that raises production limits.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVER_NODE_FLAGS } from '@palmid/server/lib/node-flags';
import type { TestPostgres } from '../test/support/postgres.ts';
import type { TestRedis } from '../test/support/redis.ts';
import { cpuMs, processTree } from './proc.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const TSX = join(HERE, '..', 'node_modules', '.bin', 'tsx');
const SELF = fileURLToPath(import.meta.url);

// ---------------------------------------------------------------------------------------------------------
// Child modes: a server (palmid or bare) or the round-robin proxy. Each prints `READY <port>` when listening.

async function servePalmid(): Promise<void> {
  const { loadConfig } = await import('@palmid/server/config');
  const { createContext } = await import('@palmid/server/bootstrap');
  const { startServer } = await import('@palmid/server/server');
  const { RateLimits, RATE_LIMITS } = await import('@palmid/server/lib/rate-limits');
  const { ExactGallery, ExactMatcher } = await import('@palmid/server/dev/testing');
  const { createVendor } = await import('@palmid/server/modules/vendors/service');
  const config = loadConfig({ ...process.env, PORT: '0', HOST: '127.0.0.1', PALMID_LOG_LEVEL: 'warn' });
  // These routes never match palms; the test matcher avoids loading the ONNX feature graph.
  const matcher = new ExactMatcher();
  const ctx = await createContext(config, { matcher, gallery: new ExactGallery() });
  const high = Object.fromEntries(
    Object.entries(RATE_LIMITS).map(([bucket, windows]) => [
      bucket,
      windows.map((w) => ({ points: 1_000_000_000, duration: w.duration })),
    ]),
  ) as unknown as typeof RATE_LIMITS;
  ctx.rateLimits = new RateLimits(ctx.redis, high);
  // No route measured here proves anything: warming the zero-knowledge prover up would only spend the first
  // seconds of the run's CPU (docs/performance.md).
  const server = await startServer(ctx, { warmUpProver: false });
  if (process.env.BENCH_SEED === '1') {
    const v = await createVendor(ctx.database.db, { name: 'Bench Vendor', scopes: ['auth', 'users'] });
    process.stdout.write(`VENDOR ${v.api_key}\n`);
  }
  process.stdout.write(`READY ${server.port}\n`);
  process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)));
}

async function serveBare(): Promise<void> {
  const Fastify = (await import('fastify')).default;
  const app = Fastify({ logger: false });
  app.get('/health', async () => ({ status: 'ok', version: 'bare' }));
  app.post('/echo', async (req, reply) => {
    reply.code(201);
    return { success: true, data: { received: req.body }, meta: { request_id: req.id } };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.stdout.write(`READY ${(app.server.address() as { port: number }).port}\n`);
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}

async function serveProxy(ports: number[]): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  let next = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const port = ports[next++ % ports.length]!;
    const upstream = request(
      { host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers, agent },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => {
      res.writeHead(502).end();
    });
    req.pipe(upstream);
  });
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  process.stdout.write(`READY ${(server.address() as { port: number }).port}\n`);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

// ---------------------------------------------------------------------------------------------------------
// Orchestrator.

interface Child {
  proc: ChildProcess;
  port: number;
  lines: string[];
  stop(): Promise<void>;
}

/**
 * Every child (bare Fastify, palmid, the proxy) runs with the Node flags of palmid's deployment
 * (server/src/lib/node-flags.ts), so both sides of a ratio run on the same runtime settings; and the children
 * load no load-generator code (autocannon, imported by the orchestrator only): loaded into a server process,
 * its modules alone moved bare Fastify from 11 to 15 µs of CPU per request (docs/performance.md).
 */
function startChild(mode: string[], env: Record<string, string> = {}): Promise<Child> {
  const proc = spawn(TSX, [...SERVER_NODE_FLAGS, SELF, ...mode], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${mode.join(' ')} did not start:\n${err}`)), 60_000);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${mode.join(' ')} exited with ${code}:\n${err}`));
    });
    let buf = '';
    proc.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      for (;;) {
        const i = buf.indexOf('\n');
        if (i < 0) break;
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        const m = /^READY (\d+)$/.exec(line);
        if (m) {
          clearTimeout(timer);
          proc.removeAllListeners('exit');
          resolve({
            proc,
            port: Number(m[1]),
            lines,
            stop: () =>
              new Promise<void>((r) => {
                if (proc.exitCode !== null) return r();
                const kill = setTimeout(() => proc.kill('SIGKILL'), 5000);
                proc.once('exit', () => {
                  clearTimeout(kill);
                  r();
                });
                proc.kill('SIGTERM');
              }),
          });
        }
      }
    });
  });
}

function rssMb(pid: number | undefined): number | null {
  if (!pid) return null;
  let kb = 0;
  let found = false;
  for (const p of processTree(pid)) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      if (m) {
        kb += Number(m[1]);
        found = true;
      }
    } catch {
      // gone meanwhile
    }
  }
  return found ? Math.round(kb / 1024) : null;
}

interface RouteSpec {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
}

interface Target {
  name: string;
  port: number;
  routes: RouteSpec[];
  headers: Record<string, string>;
  pids: (number | undefined)[];
}

interface Row {
  target: string;
  route: string;
  req_per_s: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  errors: number;
  /** Bare Fastify, same method, measured in slices interleaved with this route's. */
  baseline_req_per_s: number;
  vs_baseline: number | null;
  /** Process CPU time per request (µs), the target's node processes only (not PostgreSQL's backends). */
  cpu_us_per_req: number | null;
  baseline_cpu_us_per_req: number | null;
  /** Bare Fastify's worst slice p99 in the same slices. */
  baseline_p99_ms: number;
  rss_mb: number | null;
}

async function cannon(
  port: number,
  route: RouteSpec,
  headers: Record<string, string>,
  duration: number,
  connections: number,
) {
  const { default: autocannon } = await import('autocannon');
  return autocannon({
    url: `http://127.0.0.1:${port}${route.path}`,
    method: route.method,
    headers: { ...headers, ...(route.body ? { 'content-type': 'application/json' } : {}) },
    ...(route.body ? { body: route.body } : {}),
    connections,
    duration,
  });
}

async function api(port: number, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return (await res.json()) as { data: Record<string, unknown> };
}

/** `--targets a,b` / `--routes a,b`: keep the targets (routes) whose name contains one of the words. */
function filter(name: string): ((value: string) => boolean) | undefined {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const words = (process.argv[i + 1] ?? '')
    .split(',')
    .map((w) => w.trim().toLowerCase())
    .filter(Boolean);
  if (words.length === 0) {
    process.stderr.write(`--${name} needs a comma-separated list of words\n`);
    process.exit(2);
  }
  return (value) => words.some((w) => value.toLowerCase().includes(w));
}

const HELP = `usage: npm run bench -- http [options]
  --quick               2 s per route in one slice (smoke run)
  --duration <s>        seconds per route (default 5)
  --rounds <n>          slices per route, each after a slice of bare Fastify (default 5)
  --connections <n>     autocannon connections (default 32)
  --targets <w1,w2>     only the palmid targets whose name contains a word: sqlite, postgres, x2
  --routes <w1,w2>      only the routes whose name contains a word (e.g. status, health, create)
Bare Fastify always runs (it is the baseline). Writes bench/results/http.json.
`;

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

async function orchestrate(): Promise<void> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(HELP);
    return;
  }
  const wantTarget = filter('targets') ?? (() => true);
  const wantRoute = filter('routes') ?? (() => true);
  const quick = process.argv.includes('--quick');
  const duration = arg('duration', quick ? 2 : 5);
  const connections = arg('connections', 32);
  const rounds = arg('rounds', quick ? 1 : 5);
  const children: Child[] = [];
  const notes: string[] = [];
  let pg: TestPostgres | undefined;
  let redis: TestRedis | undefined;
  const tmp = mkdtempSync(join(tmpdir(), 'palmid-bench-'));
  const masterKey = randomBytes(32).toString('hex');
  const spawnChild = async (mode: string[], env: Record<string, string> = {}) => {
    const c = await startChild(mode, env);
    children.push(c);
    return c;
  };

  const { postgresUnavailable, startPostgres } = await import('../test/support/postgres.ts');
  const { redisUnavailable, startRedis } = await import('../test/support/redis.ts');
  const pgWhy = postgresUnavailable();
  const redisWhy = redisUnavailable();
  if (pgWhy) notes.push(`postgres targets skipped: ${pgWhy}`);
  if (redisWhy) notes.push(`two-instance target skipped: ${redisWhy}`);

  try {
    // Durable (fsync on), like production and like SQLite's synchronous=FULL: commits cost the same on both.
    const wantPg = wantTarget('palmid-postgres');
    const wantCluster = wantTarget('palmid-pg-redis-x2') || wantTarget('fastify-bare-x2');
    if (!pgWhy && (wantPg || wantCluster)) pg = await startPostgres({ durable: true });
    if (!redisWhy && pg && wantCluster) redis = await startRedis();

    const bareGet: RouteSpec = { name: 'GET /health', method: 'GET', path: '/health' };
    const barePost: RouteSpec = {
      name: 'POST /echo',
      method: 'POST',
      path: '/echo',
      body: JSON.stringify({ auth_context: { type: 'payment', amount: 1250 } }),
    };
    const targets: Target[] = [];
    const bare = await spawnChild(['--serve-bare']);
    targets.push({
      name: 'fastify-bare',
      port: bare.port,
      routes: [bareGet, barePost],
      headers: {},
      pids: [bare.proc.pid],
    });

    const palmid = async (name: string, instances: Child[], viaPort: number) => {
      const key = /^VENDOR (\S+)$/.exec(instances[0]!.lines.find((l) => l.startsWith('VENDOR')) ?? '')?.[1];
      if (!key) throw new Error(`${name}: no vendor key`);
      const created = await api(viaPort, 'POST', '/api/v1/auth/create', key, {
        auth_context: { type: 'login', expires_in_s: 3600 },
      });
      const authId = created.data.auth_id as string;
      targets.push({
        name,
        port: viaPort,
        headers: { 'x-api-key': key },
        pids: instances.map((c) => c.proc.pid),
        routes: [
          { name: 'GET /health', method: 'GET', path: '/health' },
          { name: 'GET /api/v1/status', method: 'GET', path: '/api/v1/status' },
          {
            name: 'POST /api/v1/auth/create',
            method: 'POST',
            path: '/api/v1/auth/create',
            body: JSON.stringify({ auth_context: { type: 'payment', amount: 1250, expires_in_s: 3600 } }),
          },
          { name: 'GET /api/v1/auth/:id/status', method: 'GET', path: `/api/v1/auth/${authId}/status` },
        ],
      });
    };

    const common = { PALMID_MASTER_KEY: masterKey, PALMID_ENV: 'development', PALMID_SIM: '0' };
    if (wantTarget('palmid-sqlite')) {
      const sqlite = await spawnChild(['--serve-palmid'], {
        ...common,
        DATABASE_URL: `sqlite:${join(tmp, 'bench.db')}`,
        BENCH_SEED: '1',
      });
      await palmid('palmid-sqlite', [sqlite], sqlite.port);
    }

    if (pg && wantPg) {
      const one = await spawnChild(['--serve-palmid'], {
        ...common,
        DATABASE_URL: await pg.createDatabase('bench_single'),
        BENCH_SEED: '1',
      });
      await palmid('palmid-postgres', [one], one.port);
    }
    if (pg && redis) {
      const url = await pg.createDatabase('bench_cluster');
      const env = { ...common, DATABASE_URL: url, REDIS_URL: redis.url };
      const a = await spawnChild(['--serve-palmid'], { ...env, BENCH_SEED: '1' });
      const b = await spawnChild(['--serve-palmid'], env);
      const proxy = await spawnChild(['--proxy', `${a.port},${b.port}`]);
      await palmid('palmid-pg-redis-x2', [a, b, proxy], proxy.port);
      const bareB = await spawnChild(['--serve-bare']);
      const bareProxy = await spawnChild(['--proxy', `${bare.port},${bareB.port}`]);
      targets.push({
        name: 'fastify-bare-x2',
        port: bareProxy.port,
        routes: [bareGet, barePost],
        headers: {},
        pids: [bare.proc.pid, bareB.proc.pid, bareProxy.proc.pid],
      });
    }

    // The machine may be shared (its load swings by several times within seconds): each route is measured in
    // `rounds` slices, each slice of the route right after a slice of the bare baseline of the same method,
    // and the ratio divides the two sums, so load that drifts during the run skews both sides alike.
    const rows: Row[] = [];
    const bareTarget = targets[0]!;
    const slice = Math.max(1, Math.round(duration / rounds));
    const measure = async (t: Target, r: RouteSpec) => {
      const bare = r.method === 'GET' ? bareGet : barePost;
      let bareRequests = 0;
      let requests = 0;
      let seconds = 0;
      let non2xx = 0;
      let errors = 0;
      let cpu = 0;
      let bareCpu = 0;
      const p50: number[] = [];
      const p99: number[] = [];
      let bareP99 = 0;
      for (let i = 0; i < rounds; i++) {
        const bareCpu0 = cpuMs(bareTarget.pids.slice(0, 1));
        const b = await cannon(bareTarget.port, bare, {}, slice, connections);
        bareCpu += cpuMs(bareTarget.pids.slice(0, 1)) - bareCpu0;
        const cpu0 = cpuMs(t.pids);
        const res = await cannon(t.port, r, t.headers, slice, connections);
        cpu += cpuMs(t.pids) - cpu0;
        bareRequests += b.requests.total;
        bareP99 = Math.max(bareP99, b.latency.p99);
        requests += res.requests.total;
        seconds += slice;
        non2xx += res.non2xx;
        errors += res.errors + res.timeouts;
        p50.push(res.latency.p50);
        p99.push(res.latency.p99);
      }
      const rps = Math.round(requests / seconds);
      const bareRps = Math.round(bareRequests / seconds);
      process.stderr.write(`  ${t.name} ${r.name}: ${rps} req/s (bare ${bare.name}: ${bareRps})\n`);
      p50.sort((x, y) => x - y);
      return {
        rps,
        bareRps,
        cpuUs: requests ? Math.round((cpu * 1000) / requests) : null,
        bareCpuUs: bareRequests ? Math.round((bareCpu * 1000) / bareRequests) : null,
        non2xx,
        errors,
        p50: p50[Math.floor(p50.length / 2)]!,
        p99: Math.max(...p99),
        bareP99,
      };
    };
    for (const t of targets.slice(1)) {
      const routes = t.routes.filter((r) => wantRoute(r.name));
      if (routes.length === 0) continue;
      await cannon(t.port, routes[0]!, t.headers, 1, connections); // warm-up: JIT, pools, plans
      await cannon(bareTarget.port, bareGet, {}, 1, connections);
      for (const r of routes) {
        const m = await measure(t, r);
        rows.push({
          target: t.name,
          route: r.name,
          req_per_s: m.rps,
          p50_ms: m.p50,
          p99_ms: m.p99,
          non_2xx: m.non2xx,
          errors: m.errors,
          baseline_req_per_s: m.bareRps,
          vs_baseline: m.bareRps ? Math.round((m.rps / m.bareRps) * 1000) / 1000 : null,
          cpu_us_per_req: m.cpuUs,
          baseline_cpu_us_per_req: m.bareCpuUs,
          baseline_p99_ms: m.bareP99,
          rss_mb: t.pids.reduce<number | null>((sum, pid) => {
            const v = rssMb(pid);
            return v === null ? sum : (sum ?? 0) + v;
          }, null),
        });
      }
    }

    const header = [
      'target',
      'route',
      'req/s',
      'p50 ms',
      'p99 ms',
      'non-2xx',
      'errors',
      'bare req/s',
      'vs bare',
      'CPU µs/req',
      'bare CPU µs/req',
      'bare p99 ms',
      'RSS MB',
    ];
    const table = rows.map((r) => [
      r.target,
      r.route,
      String(r.req_per_s),
      String(r.p50_ms),
      String(r.p99_ms),
      String(r.non_2xx),
      String(r.errors),
      String(r.baseline_req_per_s),
      r.vs_baseline === null ? '-' : r.vs_baseline.toFixed(3),
      r.cpu_us_per_req === null ? '-' : String(r.cpu_us_per_req),
      r.baseline_cpu_us_per_req === null ? '-' : String(r.baseline_cpu_us_per_req),
      String(r.baseline_p99_ms),
      r.rss_mb === null ? '-' : String(r.rss_mb),
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
    const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
    const out = [
      line(header),
      `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
      ...table.map(line),
    ].join('\n');
    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`;
    process.stdout.write(
      `\nHTTP load, ${rounds * slice} s per route, ${connections} connections, ${machine}, load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}\n${out}\n` +
        `vs bare: req/s divided by bare Fastify's req/s (same method: GET /health or POST /echo), measured in ${rounds} slice(s) of ${slice} s interleaved with the route's.\n` +
        `p50: median of the slices' p50; p99: the worst slice's p99.\n` +
        `CPU µs/req: CPU time (user + system) of the target's node processes per request during its slices (not PostgreSQL's); bare: the same for bare Fastify (the first instance) during its slices.\n` +
        `RSS MB: resident memory of the target's processes and their children (tsx's launcher runs node as its child; both instances and the proxy for x2) after the run.\n` +
        (notes.length ? `${notes.map((n) => `note: ${n}`).join('\n')}\n` : ''),
    );
    const resultsDir = join(HERE, 'results');
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(
      join(resultsDir, 'http.json'),
      `${JSON.stringify({ date: new Date().toISOString(), machine, duration_s: rounds * slice, rounds, connections, load_average: loadavg(), notes, rows }, null, 2)}\n`,
    );
    process.stdout.write(`wrote ${join('bench', 'results', 'http.json')}\n`);
  } finally {
    for (const c of children.reverse()) await c.stop();
    await redis?.stop();
    await pg?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

const mode = process.argv[2];
if (mode === '--serve-palmid') await servePalmid();
else if (mode === '--serve-bare') await serveBare();
else if (mode === '--proxy') await serveProxy(process.argv[3]!.split(',').map(Number));
else await orchestrate();
