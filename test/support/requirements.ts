import { describe, it } from 'vitest';
import { IN_CI, isOptOut } from './ci.ts';

/**
 * Suites that need a program outside Node (PostgreSQL, Redis, socat, Chromium). Where the program is
 * missing, a developer's run skips the suite with the reason in its name; a CI run (`CI=true`, as CI
 * services and `.ci/run`'s callers set it) fails instead, so a machine that lacks a program cannot pass by
 * not running what needs it. A skip that someone asked for (`PALMID_SKIP_POSTGRES=1`,
 * `PALMID_SKIP_REDIS=1`: what `npm run test:fast` sets, see docs/testing.md) stays a skip under CI too.
 */

type Describe = (name: string, body: () => void) => void;

/**
 * `describe` for a suite that needs a program. `missing`: why it cannot run here (install hint
 * included), or null when it can.
 */
export function describeNeeding(missing: string | null): Describe {
  if (missing === null) return describe;
  if (IN_CI && !isOptOut(missing)) {
    return (name) =>
      describe(name, () => {
        it('has what it needs to run', () => {
          throw new Error(
            `${missing} — under CI=true a suite whose program is missing fails instead of skipping`,
          );
        });
      });
  }
  process.stderr.write(`skipped (${missing})\n`);
  return (name, body) => describe.skip(`${name} (${missing})`, body);
}
