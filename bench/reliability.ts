/**
 * `npm run bench -- reliability [--quick]`: the long variants of the reliability and security tests
 * (test/fuzz, test/crash, test/security). Prints a table and writes bench/results/reliability.json.
 * Figures are quoted in docs/reliability.md.
 *
 *   fuzz  REST: 250 cases per route (every route the app serves); WebSocket: 1,000 frames per channel
 *   crash 1,000 SIGKILLs of a writer on the real store, 10 SIGKILLs of the full server under HTTP writes
 *   tamper 3,000 audit-table tampers
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCrashCampaign } from '../test/crash/campaign.ts';
import { runServerKills } from '../test/crash/server-kill.ts';
import { runRestFuzz } from '../test/fuzz/rest-campaign.ts';
import { runWsFuzz } from '../test/fuzz/ws-campaign.ts';
import { makeGolden, runTamperCampaign } from '../test/security/tamper-campaign.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const scale = (full: number, small: number) => (quick ? small : full);

const results: Record<string, unknown> = { quick, started_at: new Date().toISOString() };
const rows: [string, string, string][] = [];
const time = async <T>(name: string, fn: () => Promise<T>): Promise<T & { seconds: number }> => {
  const t0 = Date.now();
  process.stdout.write(`${name}…\n`);
  const r = await fn();
  const seconds = Math.round((Date.now() - t0) / 100) / 10;
  return Object.assign(r as object, { seconds }) as T & { seconds: number };
};

const rest = await time('REST fuzz', () => runRestFuzz({ runsPerRoute: scale(250, 30) }));
results.rest_fuzz = rest;
rows.push(['REST fuzz', `${rest.routes} routes, ${rest.cases} cases, 0 × 5xx`, `${rest.seconds} s`]);

const ws = await time('WebSocket fuzz', () => runWsFuzz({ runsPerChannel: scale(1000, 150) }));
results.ws_fuzz = ws;
rows.push([
  'WebSocket fuzz',
  `${ws.methods} methods, ${ws.frames} frames, 0 × INTERNAL_ERROR`,
  `${ws.seconds} s`,
]);

let lastShown = 0;
const crash = await time('writer kills', () =>
  runCrashCampaign({
    kills: scale(1000, 100),
    onProgress: (i) => {
      if (i - lastShown >= 100) {
        lastShown = i;
        process.stdout.write(`  ${i} kills\n`);
      }
    },
  }),
);
results.crash = crash;
rows.push([
  'SIGKILL writer (real store)',
  `${crash.kills} kills, ${crash.acknowledged} acked writes kept, ${crash.auditRows} audit rows verify`,
  `${crash.seconds} s`,
]);

const srv = await time('server kills', () => runServerKills({ kills: scale(10, 2) }));
results.server_kills = srv;
rows.push([
  'SIGKILL server (HTTP writes)',
  `${srv.kills} kills, ${srv.acknowledged} acked writes kept`,
  `${srv.seconds} s`,
]);

const golden = await makeGolden();
const tamper = await time('tampering', () => runTamperCampaign(golden, { runs: scale(3000, 300) }));
golden.remove();
results.tamper = tamper;
rows.push(['audit tampering', `${tamper.detected} / ${tamper.cases} detected`, `${tamper.seconds} s`]);

// Access control and abuse are fixed matrices: run their tests and read the figures they print.
const vitest = spawnSync(
  join(HERE, '..', 'node_modules', '.bin', 'vitest'),
  ['run', 'test/security/access-control.test.ts', 'test/security/abuse.test.ts', '--reporter=dot'],
  { cwd: join(HERE, '..'), env: { ...process.env, RELIABILITY_FIGURES: '1' }, encoding: 'utf8' },
);
const grab = (tag: string) => {
  const m = new RegExp(`${tag} (\\{.*\\})`).exec(vitest.stdout);
  return m ? (JSON.parse(m[1]!) as Record<string, unknown>) : undefined;
};
const access = grab('ACCESS_CONTROL') as { attempted: number; refused: number } | undefined;
results.access_control = access;
results.abuse = grab('ABUSE');
rows.push([
  'cross-tenant / authz attempts',
  access ? `${access.refused} / ${access.attempted} refused` : 'n/a',
  '',
]);
rows.push(['abuse tests', vitest.status === 0 ? 'pass' : `FAIL (exit ${vitest.status})`, '']);

results.finished_at = new Date().toISOString();
mkdirSync(join(HERE, 'results'), { recursive: true });
writeFileSync(join(HERE, 'results', 'reliability.json'), `${JSON.stringify(results, null, 2)}\n`);
process.stdout.write(
  `\n| check | result | time |\n|---|---|---|\n${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}\n\nwritten bench/results/reliability.json\n`,
);
process.exit(vitest.status === 0 ? 0 : 1);
