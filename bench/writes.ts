/**
 * The durable create's write path alone (docs/performance.md, "Creates, third pass"): CPU time of this
 * process per `POST /api/v1/auth/create` write, through `Database.write` (group commit) and the route's own
 * `createAuthContext`, without HTTP. Under a shared load the process's CPU per write says more than req/s;
 * on PostgreSQL the CPU of PostgreSQL's own processes per write is shown beside it (Linux, from /proc).
 *
 *   npm run bench -- writes                                # SQLite and PostgreSQL, 20 000 writes, 12 in flight
 *   npm run bench -- writes --writes 40000 --concurrency 32 --targets sqlite
 *
 * Writes bench/results/writes.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AuthContextInput } from '@palmid/contracts/api/auth-contexts';
import type { AppContext, VendorPrincipal } from '@palmid/server/context';
import { type Database, openDatabase } from '@palmid/server/db/index';
import { createAuthContext } from '@palmid/server/modules/auth-contexts/state';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../test/support/postgres.ts';
import { cpuMs } from './proc.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

const HELP = `usage: npm run bench -- writes [options]
  --writes <n>          measured writes per target (default 20000, after 3000 to warm up)
  --concurrency <n>     writes in flight (default 12: about the group size the HTTP bench forms)
  --targets <w1,w2>     sqlite, postgres (default both; PostgreSQL durable, as in the http bench)
`;

function num(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) {
    process.stderr.write(`--${name} needs a positive integer\n${HELP}`);
    process.exit(2);
  }
  return v;
}

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(HELP);
  process.exit(0);
}
const WRITES = num('writes', 20_000);
const CONCURRENCY = num('concurrency', 12);
const ti = process.argv.indexOf('--targets');
const targets = ti >= 0 ? (process.argv[ti + 1] ?? '').split(',') : ['sqlite', 'postgres'];
for (const t of targets) {
  if (t !== 'sqlite' && t !== 'postgres') {
    process.stderr.write(`unknown target '${t}'\n${HELP}`);
    process.exit(2);
  }
}

interface Row {
  target: string;
  writes: number;
  concurrency: number;
  cpuUsPerWrite: number;
  userUsPerWrite: number;
  systemUsPerWrite: number;
  writesPerSecond: number;
  writesPerCommit: number;
  /** PostgreSQL's own processes (postmaster and backends), per write; null on SQLite or off Linux. */
  databaseCpuUsPerWrite: number | null;
}

const vendor: VendorPrincipal = {
  id: 'bench-vendor',
  name: 'Bench',
  url: '',
  mode: 'test',
  scopes: ['auth'],
  keyId: 'bench-key',
};
// The HTTP bench's create body.
const input: AuthContextInput = { type: 'payment', amount: 1250, expires_in_s: 3600 };

async function measure(target: string, database: Database, postmaster?: number): Promise<Row> {
  const ctx = {
    now: () => Date.now(),
    config: { PALMID_AUTH_TTL_S: 120 },
    database,
  } as unknown as AppContext;
  const create = () => database.write((trx, batch) => createAuthContext(ctx, trx, vendor, input, batch));
  const run = async (n: number) => {
    let started = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (started++ < n) await create();
      }),
    );
  };
  await run(3000);
  const commits = database.commits();
  const dbCpu = postmaster ? cpuMs([postmaster]) / 1000 : 0;
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await run(WRITES);
  const seconds = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu);
  const round = (v: number) => Math.round(v * 10) / 10;
  return {
    target,
    writes: WRITES,
    concurrency: CONCURRENCY,
    cpuUsPerWrite: round((used.user + used.system) / WRITES),
    userUsPerWrite: round(used.user / WRITES),
    systemUsPerWrite: round(used.system / WRITES),
    writesPerSecond: Math.round(WRITES / seconds),
    writesPerCommit: round(WRITES / (database.commits() - commits)),
    databaseCpuUsPerWrite: postmaster ? round(((cpuMs([postmaster]) / 1000 - dbCpu) * 1e6) / WRITES) : null,
  };
}

const rows: Row[] = [];
if (targets.includes('sqlite')) {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-bench-writes-'));
  const database = await openDatabase(`sqlite:${join(dir, 'writes.db')}`);
  try {
    rows.push(await measure('sqlite', database));
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
if (targets.includes('postgres')) {
  const why = postgresUnavailable();
  if (why) process.stderr.write(`postgres skipped: ${why}\n`);
  else {
    let pg: TestPostgres | undefined;
    let database: Database | undefined;
    try {
      pg = await startPostgres({ durable: true });
      database = await openDatabase(await pg.createDatabase('bench_writes'));
      rows.push(await measure('postgres', database, pg.pid));
    } finally {
      await database?.close();
      await pg?.stop();
    }
  }
}

const load = loadavg().map((l) => l.toFixed(1));
process.stdout.write(
  `\nDurable creates through Database.write, no HTTP; this process's CPU (PostgreSQL's own not counted); load average ${load.join(' ')}\n`,
);
process.stdout.write(
  '| target | writes | in flight | CPU µs/write | user | system | writes/s | writes/commit | PostgreSQL CPU µs/write |\n|---|---|---|---|---|---|---|---|---|\n',
);
for (const r of rows) {
  process.stdout.write(
    `| ${r.target} | ${r.writes} | ${r.concurrency} | ${r.cpuUsPerWrite} | ${r.userUsPerWrite} | ${r.systemUsPerWrite} | ${r.writesPerSecond} | ${r.writesPerCommit} | ${r.databaseCpuUsPerWrite ?? ''} |\n`,
  );
}
mkdirSync(join(HERE, 'results'), { recursive: true });
writeFileSync(join(HERE, 'results', 'writes.json'), `${JSON.stringify({ load, rows }, null, 2)}\n`);
process.stdout.write('wrote bench/results/writes.json\n');
process.exit(0);
