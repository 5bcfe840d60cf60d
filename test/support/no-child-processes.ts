/**
 * Setup file of `npm run test:fast` (vitest.config.ts): the fast loop runs no child processes, so any
 * attempt to start one fails with a message saying where the test belongs. One exception: esbuild's own
 * service process, which the server starts to bundle the web pages (as vitest does to load the tests).
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';

const names = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;
const isEsbuild = (file: unknown) => typeof file === 'string' && /[\\/]esbuild(\.exe)?$/.test(file);
for (const name of names) {
  const real = childProcess[name] as (...args: unknown[]) => unknown;
  Object.defineProperty(childProcess, name, {
    configurable: true,
    writable: true,
    value: (file: unknown, ...rest: unknown[]) => {
      if (isEsbuild(file)) return real(file, ...rest);
      throw new Error(
        `child_process.${name}(${JSON.stringify(file)}) in the fast loop: a test that starts a process belongs ` +
          'to the system group (list it in SPAWNING in vitest.config.ts, or put it under test/)',
      );
    },
  });
}
// `import { spawn } from 'node:child_process'` reads the patched functions too.
syncBuiltinESMExports();
