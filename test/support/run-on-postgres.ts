/**
 * Runs vitest with every `createTestApp` on a throwaway PostgreSQL instead of SQLite:
 *   npx tsx test/support/run-on-postgres.ts server/src
 * (arguments go to `vitest run`). Used to find dialect differences in the whole server suite.
 */
import { spawn } from 'node:child_process';
import { postgresUnavailable, startPostgres } from './postgres.ts';

const why = postgresUnavailable();
if (why) {
  // nothing ran on PostgreSQL: not a success
  process.stderr.write(`cannot run the suite on PostgreSQL: ${why}\n`);
  process.exit(1);
}
const pg = await startPostgres();
process.stderr.write(`PostgreSQL on ${pg.url}\n`);
const child = spawn('npx', ['vitest', 'run', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, PALMID_TEST_DATABASE_URL: pg.url },
});
const code = await new Promise<number>((resolve) => child.once('exit', (c) => resolve(c ?? 1)));
await pg.stop();
process.exit(code);
