import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { hasServerNodeFlags, SERVER_NODE_FLAGS } from './node-flags.ts';

/** The young generation's semi-space size, in MiB, of a fresh Node process started with `flags`. */
const probe = `const s = require('node:v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
process.stdout.write(String(s ? Math.round(s.space_size / (1024 * 1024)) : 0));`;
const semiSpace = (flags: readonly string[]) =>
  Number(execFileSync(process.execPath, [...flags, '-e', probe], { encoding: 'utf8' }));

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
