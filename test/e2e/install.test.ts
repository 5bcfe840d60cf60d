import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * What a fresh clone's `npm ci` does (README "Install"): npm itself on a copy of the manifests, so the test
 * sees npm's own verdict on the lockfile, the engines and the project's .npmrc.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);
const WORKSPACES = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] })
  .workspaces;
const MANIFESTS = [
  'package.json',
  'package-lock.json',
  '.npmrc',
  ...WORKSPACES.map((w) => `${w}/package.json`),
];

describe('installing from a fresh clone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-install-'));
  for (const f of MANIFESTS) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    copyFileSync(join(ROOT, f), join(dir, f));
  }
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('npm ci accepts the committed lockfile, with no engine or unknown-config warning', async () => {
    const res = await run('npm', ['ci', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: dir,
      env: { ...process.env, npm_config_loglevel: 'warn' },
    }).catch((err: { code: number; stdout: string; stderr: string }) => err);
    expect('code' in res ? res.code : 0, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/added \d+ packages/);
    expect(res.stderr).not.toMatch(/EBADENGINE/);
    expect(res.stderr).not.toMatch(/Unknown project config/);
  }, 120_000);

  it('the lockfile lists every optional platform package (.ci/complete-lockfile.mjs --check)', async () => {
    const res = await run(process.execPath, [join(ROOT, '.ci/complete-lockfile.mjs'), '--check'], {
      cwd: ROOT,
    });
    expect(res.stdout).toBe('');
  });

  // Package rules (declared dependencies, explicit exports that exist): test/contract/workspaces.test.ts.

  it.runIf(process.platform === 'linux' && process.arch === 'x64')(
    'onnxruntime-node skipped its CUDA download (allowScripts) and still loads',
    async () => {
      const bin = join(ROOT, 'node_modules/onnxruntime-node/bin/napi-v6/linux/x64');
      expect(existsSync(join(bin, 'libonnxruntime.so.1'))).toBe(true);
      expect(existsSync(join(bin, 'libonnxruntime_providers_cuda.so'))).toBe(false);
      const res = await run(process.execPath, ['-e', "require('onnxruntime-node'); console.log('loaded')"], {
        cwd: ROOT,
      });
      expect(res.stdout.trim()).toBe('loaded');
    },
  );
});
