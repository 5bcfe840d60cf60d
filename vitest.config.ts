import { defineConfig } from 'vitest/config';

/**
 * Two groups of test files (docs/testing.md):
 *
 * - `unit`: every `*.test.ts` under a workspace's `src/`, plus test/contract and test/docs. In-process
 *   tests: no child processes, no crash campaigns, no clusters, no browsers. `npm run test:fast` runs this
 *   group alone with PALMID_TEST_FAST=1, which skips its PostgreSQL and Redis suites (they start a
 *   server each) and makes any other child process an error.
 * - `system`: everything else under test/ (e2e, security, reliability, crash, scale, fuzz, serial,
 *   browser, and any directory added later), plus the few `src/` tests that spawn a process (SPAWNING
 *   below). Real processes, sockets, campaigns.
 *
 * A new file lands in its group by where it lives; a `src/` test that spawns a process fails under
 * `test:fast` with a message that points here.
 */

/** `src/` tests that run a CLI or a second Node process: they belong to the system group. */
const SPAWNING = [
  'server/src/lib/node-flags.test.ts',
  'server/src/modules/verification/verify-proof-cli.test.ts',
  'server/src/cli/verify-proof.test.ts',
  'server/src/modules/auth-contexts/routes.test.ts', // `npm run vendor -- watch` as a process
];

const UNIT = [
  '{shared/contracts,shared/palm,shared/zk,firmware-sim,agent,server,palm-lab}/src/**/*.test.ts',
  'test/contract/**/*.test.ts',
  'test/docs/**/*.test.ts',
];

const FAST = process.env.PALMID_TEST_FAST === '1';

/**
 * Test files run in parallel. Most system tests wait on processes, sockets and timers rather than
 * compute, so more workers than cores shortens the run; PALMID_TEST_WORKERS overrides.
 */
const workers = Number(process.env.PALMID_TEST_WORKERS) || 3;

export default defineConfig({
  test: {
    exclude: ['**/node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: workers,
    minWorkers: 1,
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: UNIT,
          exclude: ['**/node_modules/**', ...SPAWNING],
          ...(FAST
            ? {
                env: { PALMID_SKIP_POSTGRES: '1', PALMID_SKIP_REDIS: '1' },
                setupFiles: ['test/support/no-child-processes.ts'],
              }
            : {}),
        },
      },
      {
        extends: true,
        test: {
          name: 'system',
          include: ['test/**/*.test.ts', ...SPAWNING],
          exclude: ['**/node_modules/**', 'test/contract/**', 'test/docs/**'],
        },
      },
    ],
  },
});
