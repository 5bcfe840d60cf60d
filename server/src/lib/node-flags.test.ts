import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { hasServerNodeFlags, SERVER_NODE_FLAGS } from './node-flags.ts';

const probe = `import('${new URL('./node-flags.ts', import.meta.url).pathname}').then((m) => process.stdout.write(String(m.semiSpaceMiB())))`;
const semiSpace = (flags: readonly string[]) =>
  Number(execFileSync(process.execPath, [...flags, '--import', 'tsx', '-e', probe], { encoding: 'utf8' }));

/** The server's Node flags (lib/node-flags.ts) give a process a 16 MiB young generation from the start. */
describe('server node flags', () => {
  it('start a process with 16 MiB semi-spaces; without them it starts smaller', () => {
    expect(semiSpace(SERVER_NODE_FLAGS)).toBeGreaterThanOrEqual(16);
    expect(semiSpace([])).toBeLessThan(16);
  });

  it('tells whether a process was started with them', () => {
    expect(hasServerNodeFlags([...SERVER_NODE_FLAGS, '--import', 'tsx'])).toBe(true);
    expect(hasServerNodeFlags(['--import', 'tsx'])).toBe(false);
  });
});
