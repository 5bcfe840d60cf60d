#!/usr/bin/env node
// Adds to package-lock.json the other platforms' optional native packages that npm left out.
//
// Why: the registry mirror of this build machine serves only some platforms' binaries (for example
// @biomejs/cli-darwin-arm64 answers 404 here). npm then drops those optional packages from the lockfile
// it writes, and `npm ci` refuses that lockfile ("Missing: @biomejs/cli-darwin-arm64@ from lock file").
// Every such package is pinned by its parent's `optionalDependencies` (exact versions), and its platform
// is spelled in its name, so the entry can be written without asking the registry: `npm ci` then skips it
// on every other platform, and on its own platform fetches it by name and version as usual.
//
// Run after `npm install` changes the lockfile:  node .ci/complete-lockfile.mjs   (idempotent)
// `--check` only reports (exit 1 when entries are missing), for CI.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const LOCK = fileURLToPath(new URL('../package-lock.json', import.meta.url));
const OSES = [
  'android',
  'darwin',
  'freebsd',
  'linux',
  'openbsd',
  'openharmony',
  'win32',
  'sunos',
  'aix',
  'netbsd',
];
const CPUS = ['arm64', 'arm', 'x64', 'ia32', 'loong64', 'ppc64', 'riscv64', 's390x', 'mips64el', 'wasm32'];

/** The os/cpu/libc a platform package's name spells, e.g. rollup-linux-arm-musleabihf → linux, arm, musl. */
export function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OSES.includes(p));
  const cpu = parts.find((p) => CPUS.includes(p));
  if (!os || !cpu) return undefined;
  const platform = { os: [os], cpu: [cpu] };
  if (os === 'linux') platform.libc = [parts.some((p) => p.startsWith('musl')) ? 'musl' : 'glibc'];
  return platform;
}

const check = process.argv.includes('--check');
const lock = JSON.parse(readFileSync(LOCK, 'utf8'));
const pkgs = lock.packages;
const added = [];
for (const [path, entry] of Object.entries(pkgs)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    // npm resolves a dependency from the parent's own node_modules first, then upwards.
    const base = path === '' ? '' : `${path}/`;
    const candidates = [`${base}node_modules/${dep}`];
    for (let p = path; p.includes('node_modules/'); ) {
      p = p.slice(0, p.lastIndexOf('node_modules/')).replace(/\/$/, '');
      candidates.push(`${p === '' ? '' : `${p}/`}node_modules/${dep}`);
    }
    if (candidates.some((c) => pkgs[c])) continue;
    const platform = platformOf(dep);
    if (!platform) {
      process.stderr.write(
        `cannot tell the platform of ${dep} (optional dependency of ${path || 'the root'})\n`,
      );
      process.exit(2);
    }
    const at = `node_modules/${dep}`;
    pkgs[at] = {
      version,
      cpu: platform.cpu,
      ...(entry.dev ? { dev: true } : {}),
      ...(platform.libc ? { libc: platform.libc } : {}),
      optional: true,
      os: platform.os,
    };
    added.push(`${dep}@${version}`);
  }
}
if (check) {
  if (added.length)
    process.stdout.write(`package-lock.json lacks ${added.length} entries: ${added.join(', ')}\n`);
  process.exit(added.length ? 1 : 0);
}
// Same order as npm writes: the root first, then by path.
const [root, ...rest] = Object.keys(pkgs);
lock.packages = Object.fromEntries([
  [root, pkgs[root]],
  ...rest.sort((a, b) => a.localeCompare(b, 'en')).map((k) => [k, pkgs[k]]),
]);
writeFileSync(LOCK, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(added.length ? `added ${added.length}: ${added.join(', ')}\n` : 'nothing to add\n');
