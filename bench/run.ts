/**
 * `npm run bench [-- <name> [args…]]`: runs one benchmark (`bench/<name>.ts`) or, without a name, every
 * registered one in turn. Each prints its own table and writes JSON under bench/results/.
 *
 *   npm run bench                 # all
 *   npm run bench -- http --quick # one, with its own flags
 *   npm run bench -- palm --help  # what one measures and its flags (its opening comment); runs nothing
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const TSX = join(HERE, '..', 'node_modules', '.bin', 'tsx');

/** name → what it measures. A registered bench whose file is absent is skipped with a note. */
const BENCHES: Record<string, string> = {
  http: 'vendor routes under load: SQLite, PostgreSQL, two instances behind round-robin, vs bare Fastify',
  writes: 'CPU per durable create through group commit, without HTTP, SQLite and PostgreSQL',
  store: 'database bytes per enrolled user and per authentication, SQLite and PostgreSQL',
  palm: '1:N identification latency at 1M templates, memory per template',
  capture: 'processCapture per decoded 640 × 480 frame (p50 vs the 5 ms target), synthetic or a given folder',
  zk: 'zero-knowledge age proof generation and verification',
  e2e: 'end-to-end latency, context created → vendor notified, real processes (p50/p95 over 100 runs)',
  attestation: 'cost of attested captures per identification: sign, verify, nonce, full check on SQLite',
  revocation:
    'revocation-to-close latency of kiosk and vendor-key sockets, one instance and two (p99 over 100)',
  reliability: 'fuzzing, SIGKILL crash safety, audit tampering, access control and abuse (long variants)',
};

function run(name: string, args: string[]): number {
  const file = join(HERE, `${name}.ts`);
  if (!existsSync(file)) {
    process.stderr.write(`bench ${name}: ${file} not present, skipped\n`);
    return 0;
  }
  process.stdout.write(`\n== bench ${name}: ${BENCHES[name] ?? ''}\n`);
  const res = spawnSync(TSX, [file, ...args], { stdio: 'inherit' });
  return res.status ?? 1;
}

const [name, ...args] = process.argv.slice(2);
if (name === '--help' || name === '-h') {
  process.stdout.write(
    `usage: npm run bench [-- <name> [args…]]\n${Object.entries(BENCHES)
      .map(([n, d]) => `  ${n.padEnd(6)} ${d}`)
      .join('\n')}\n`,
  );
  process.exit(0);
}
if (name) {
  if (!(name in BENCHES) && !existsSync(join(HERE, `${name}.ts`))) {
    process.stderr.write(`unknown bench '${name}' (known: ${Object.keys(BENCHES).join(', ')})\n`);
    process.exit(2);
  }
  if (args.includes('--help') || args.includes('-h')) {
    // a bench documents its flags in its opening comment: print that instead of running it
    const file = join(HERE, `${name}.ts`);
    const doc = existsSync(file) ? /^\/\*\*([\s\S]*?)\*\//.exec(readFileSync(file, 'utf8')) : null;
    const text = doc
      ? doc[1]!
          .split('\n')
          .map((l) => l.replace(/^\s*\* ?/, ''))
          .join('\n')
          .trim()
      : (BENCHES[name] ?? '');
    process.stdout.write(`bench ${name}: ${BENCHES[name] ?? ''}\n\n${text}\n`);
    process.exit(0);
  }
  process.exit(run(name, args));
}
let failed = 0;
for (const n of Object.keys(BENCHES)) if (run(n, []) !== 0) failed++;
process.exit(failed ? 1 : 0);
