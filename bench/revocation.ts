/**
 * Revocation-to-close latency (docs/security.md, "Revocation is immediate"): a kiosk or a vendor key is
 * revoked the way `admin pvs revoke` / `admin vendor revoke-key` do it (the same functions, on a database
 * connection of their own, then the Redis announcement when REDIS_URL is set), and the time until the
 * socket that used it sees its 1008 `revoked` close is measured at the client. Half the trials revoke a
 * kiosk (`/ws/pvs`), half a vendor key (`/ws/vendor`).
 *
 *   single   one server process, SQLite, no Redis: the server finds the revocation by polling
 *            (PALMID_REVOCATION_POLL_MS, default 200)
 *   cluster  two instances on PostgreSQL (when installed) and Redis: the announcement reaches both at once;
 *            the socket sits on either instance in turn
 *
 * Also the cost of the check before every delivery (one indexed read, SQLite, in process).
 * Prints p50/p95/p99/max per setup and writes bench/results/revocation.json.
 *   npx tsx bench/revocation.ts [--trials 100] [--only single|cluster]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '@palmid/server/db/index';
import { createTestApp } from '@palmid/server/dev/testing';
import { createPvs, revokePvs } from '@palmid/server/modules/pvs/service';
import { announceRevocation } from '@palmid/server/modules/revocation/watcher';
import { createVendor, revokeKeys } from '@palmid/server/modules/vendors/service';
import { SingleBar } from 'cli-progress';
import { startServer, tempDir } from '../test/e2e/harness.ts';
import { clusterUnavailable, startCluster } from '../test/scale/cluster.ts';
import { openKiosk, Recorder } from '../test/security/sockets.ts';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const TRIALS = Number(arg('--trials') ?? 100);
const ONLY = arg('--only');
if (!Number.isInteger(TRIALS) || TRIALS < 2) {
  process.stderr.write('--trials must be an integer ≥ 2\n');
  process.exit(2);
}

interface Stats {
  trials: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
  over_1s: number;
}

function stats(ms: number[]): Stats {
  const s = [...ms].sort((a, b) => a - b);
  const pct = (p: number) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
  const r = (x: number) => Math.round(x * 10) / 10;
  return {
    trials: s.length,
    p50_ms: r(pct(50)),
    p95_ms: r(pct(95)),
    p99_ms: r(pct(99)),
    max_ms: r(s[s.length - 1]!),
    over_1s: s.filter((x) => x > 1000).length,
  };
}

/** Runs the trials against `bases`; `databaseUrl` and `redisUrl` are what the admin CLI would use. */
async function trials(label: string, bases: string[], databaseUrl: string, redisUrl?: string) {
  const database = await openDatabase(databaseUrl);
  const db = database.db;
  const bar = new SingleBar({ format: `${label.padEnd(8)} {bar} {value}/{total}`, stream: process.stderr });
  bar.start(TRIALS, 0);
  const ms: number[] = [];
  try {
    for (let i = 0; i < TRIALS; i++) {
      const base = bases[i % bases.length]!;
      let socket: Recorder;
      let revoke: () => Promise<void>;
      if (i % 2 === 0) {
        const kiosk = await createPvs(db, { name: `bench ${i}` });
        socket = await openKiosk(base, kiosk);
        revoke = async () => {
          await revokePvs(db, kiosk.pvs_id);
          await announceRevocation(redisUrl, { kind: 'pvs', id: kiosk.pvs_id });
        };
      } else {
        const vendor = await createVendor(db, { name: `bench ${i}` });
        socket = await Recorder.open(`${base}/ws/vendor`, { 'x-api-key': vendor.api_key });
        revoke = async () => {
          await revokeKeys(db, vendor.vendor_id);
          await announceRevocation(redisUrl, { kind: 'vendor', id: vendor.vendor_id });
        };
      }
      // Trials start at random points of the poll cycle, as real revocations do.
      await new Promise((r) => setTimeout(r, Math.random() * 250));
      const t0 = performance.now();
      await revoke();
      const closed = await socket.whenClosed(5000);
      if (closed.reason !== 'revoked') throw new Error(`trial ${i}: closed with ${closed.reason}`);
      ms.push(closed.at - t0);
      bar.increment();
    }
  } finally {
    bar.stop();
    await database.close();
  }
  return stats(ms);
}

const results: Record<string, unknown> = { trials: TRIALS, started_at: new Date().toISOString() };

if (ONLY !== 'cluster') {
  const tmp = tempDir('palmid-bench-revoke-');
  const databaseUrl = `sqlite:${join(tmp.dir, 'p.db')}`;
  const server = await startServer({
    PORT: '0',
    DATABASE_URL: databaseUrl,
    PALMID_KEY_FILE: join(tmp.dir, 'k'),
    PALMID_ENV: 'sandbox',
  });
  try {
    results.single = {
      setup: 'one server process, SQLite, no Redis (poll 200 ms)',
      ...(await trials('single', [server.base.replace(/^http/, 'ws')], databaseUrl)),
    };
  } finally {
    await server.stop();
    tmp.remove();
  }
}

if (ONLY !== 'single') {
  const why = clusterUnavailable();
  if (why) {
    process.stderr.write(`cluster skipped: ${why}\n`);
    results.cluster = { skipped: why };
  } else {
    const c = await startCluster(2);
    try {
      results.cluster = {
        setup: `two instances, ${c.store === 'postgres' ? 'PostgreSQL' : 'SQLite'} + Redis`,
        ...(await trials('cluster', c.bases, c.env.DATABASE_URL!, c.redisUrl)),
      };
    } finally {
      await c.stop();
    }
  }
}

if (ONLY === undefined) {
  // What the check before every delivery costs: one indexed read per delivery (SQLite, in process).
  const t = await createTestApp({ PALMID_ENV: 'sandbox' });
  try {
    const kiosk = await createPvs(t.ctx.database.db, { name: 'cost' });
    const ms: number[] = [];
    for (let i = 0; i < 5000; i++) {
      const t0 = performance.now();
      await t.ctx.revocations.isLive('pvs', kiosk.pvs_id);
      ms.push(performance.now() - t0);
    }
    ms.sort((a, b) => a - b);
    results.check_before_delivery_us = {
      p50: Math.round(ms[2500]! * 1000),
      p99: Math.round(ms[4950]! * 1000),
      checks: ms.length,
    };
  } finally {
    await t.close();
  }
}

const rows = (['single', 'cluster'] as const)
  .map((k) => [k, results[k] as (Stats & { setup: string }) | undefined] as const)
  .filter(([, v]) => v && 'p99_ms' in v);
process.stdout.write(
  `\n${'setup'.padEnd(52)} ${'p50'.padStart(8)} ${'p95'.padStart(8)} ${'p99'.padStart(8)} ${'max'.padStart(8)}  >1 s\n`,
);
for (const [, v] of rows) {
  const s = v!;
  process.stdout.write(
    `${s.setup.padEnd(52)} ${`${s.p50_ms} ms`.padStart(8)} ${`${s.p95_ms} ms`.padStart(8)} ${`${s.p99_ms} ms`.padStart(8)} ${`${s.max_ms} ms`.padStart(8)}  ${s.over_1s}/${s.trials}\n`,
  );
}
const single = results.single as Stats | undefined;
const cluster = results.cluster as Stats | undefined;
if (single?.p99_ms && cluster?.p99_ms)
  process.stdout.write(`p99 ratio single / cluster: ${(single.p99_ms / cluster.p99_ms).toFixed(1)}×\n`);
const cost = results.check_before_delivery_us as { p50: number; p99: number } | undefined;
if (cost) process.stdout.write(`check before delivery (SQLite): p50 ${cost.p50} µs, p99 ${cost.p99} µs\n`);
const out = new URL('./results/', import.meta.url).pathname;
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'revocation.json'), `${JSON.stringify(results, null, 2)}\n`);
process.exit(0);
