import { describe, expect, it } from 'vitest';
import { cli } from './harness.ts';

/**
 * `npm run bench -- <name> --help` prints what the bench measures and its flags (its opening
 * comment) and runs nothing: a benchmark takes minutes and loads the machine.
 */
describe('npm run bench -- <name> --help', () => {
  it('lists the benches, and each one answers --help with its usage without running', async () => {
    const all = await cli('bench/run.ts', ['--help']);
    expect(all.code).toBe(0);
    const names = [...all.stdout.matchAll(/^ {2}(\w+)\s/gm)].map((m) => m[1]!);
    expect(names).toEqual(expect.arrayContaining(['palm', 'http', 'e2e', 'capture']));
    for (const name of names) {
      const r = await cli('bench/run.ts', [name, '--help'], {}, 20_000);
      expect(r.code, name).toBe(0);
      expect(r.stdout, name).toMatch(new RegExp(`^bench ${name}: `));
      // its usage line: `npm run bench -- <name> …` or `npx tsx bench/<name>.ts …`
      expect(
        r.stdout.includes(`npm run bench -- ${name}`) || r.stdout.includes(`bench/${name}.ts`),
        name,
      ).toBe(true);
      expect(r.stdout, name).not.toContain('== bench'); // the bench itself never started
    }
  }, 120_000);
});
