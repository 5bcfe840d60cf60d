/**
 * Top self-time table of a V8 CPU profile (`node --cpu-prof`), as in docs/performance.md.
 *
 *   npx tsx bench/cpuprofile-top.ts <file.cpuprofile> [--top 10] [--skip-ms 4000]
 *
 * `--skip-ms` leaves out the first milliseconds of the profile (start-up). Idle time is not ranked; its
 * share is printed under the table.
 */
import { readFileSync } from 'node:fs';

interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(v) || v < 0) {
    process.stderr.write(`--${name} must be a non-negative number\n`);
    process.exit(2);
  }
  return v;
}

const file = process.argv[2];
if (!file || file === '--help' || file === '-h') {
  process.stdout.write('usage: npx tsx bench/cpuprofile-top.ts <file.cpuprofile> [--top 10] [--skip-ms 0]\n');
  process.exit(file ? 0 : 2);
}
const top = arg('top', 10);
const skipUs = arg('skip-ms', 0) * 1000;
let profile: Profile;
try {
  profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
} catch (err) {
  process.stderr.write(`cannot read ${file}: ${(err as Error).message}\n`);
  process.exit(1);
}
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let total = 0;
let t = 0;
for (const [i, id] of profile.samples.entries()) {
  const d = profile.timeDeltas[i] ?? 0;
  t += d;
  if (t < skipUs) continue;
  total += d;
  const cf = byId.get(id)?.callFrame;
  if (!cf) continue;
  const where = cf.url
    .replace(/^.*node_modules\//, '')
    .replace(/^file:\/\/.*?\/(server|shared|agent|bench)\//, '$1/');
  const key = `\`${cf.functionName || '(anonymous)'}\`${where ? ` ${where}:${cf.lineNumber + 1}` : ''}`;
  self.set(key, (self.get(key) ?? 0) + d);
}
const idle = self.get('`(idle)`') ?? 0;
const rows = [...self]
  .filter(([k]) => k !== '`(idle)`')
  .sort((a, b) => b[1] - a[1])
  .slice(0, top);
const pct = (v: number) => `${((100 * v) / (total || 1)).toFixed(1)} %`;
process.stdout.write(
  `| # | function | self time |\n|---|---|---|\n${rows.map(([k, v], i) => `| ${i + 1} | ${k} | ${pct(v)} |`).join('\n')}\n\n` +
    `(idle: ${pct(idle)} of ${(total / 1e6).toFixed(1)} s sampled)\n`,
);
