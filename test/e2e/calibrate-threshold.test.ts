import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, makeRoiSet, refileSecondSession, tempDir } from './harness.ts';

/**
 * `palm-lab/scripts/calibrate-threshold.ts` as a process, on a synthetic ROI set in which one
 * subject's second session was filed under a new label: `--same` pools the two labels' cross pairs
 * as genuine pairs, as `palm eval --same` does (docs/palm-pipeline.md, "Look-alike identities").
 */
describe('calibrate-threshold --same', () => {
  const tmp = tempDir('palmid-calibrate-');
  const set = join(tmp.dir, 'rois');

  beforeAll(async () => {
    await makeRoiSet(set, 4, 'png', 'calib');
    // s002's second session becomes "s005": one palm under two labels
    refileSecondSession(set, 's002', 's005');
  }, 180_000);
  afterAll(() => tmp.remove());

  const lines = (stdout: string) => stdout.trim().split('\n');
  const counts = (stdout: string) =>
    JSON.parse(lines(stdout).at(-1)!) as {
      genuine: number;
      impostor: number;
    };

  it('counts the merged labels cross pairs as genuine and names the merge', async () => {
    const calibrate = (extra: string[]) =>
      cli('palm-lab/scripts/calibrate-threshold.ts', ['--rotations', '0', ...extra, set], {}, 180_000);
    const apart = await calibrate([]);
    const merged = await calibrate(['--same', 's002=s005']);
    expect(apart.code, apart.stderr).toBe(0);
    expect(merged.code, merged.stderr).toBe(0);
    // 16 images: 3 subjects of 4 and two labels of 2; merged, 4 subjects of 4
    expect(counts(apart.stdout)).toEqual({ genuine: 20, impostor: 100 });
    expect(counts(merged.stdout)).toEqual({ genuine: 24, impostor: 96 });
    expect(JSON.parse(lines(merged.stdout)[0]!)).toMatchObject({ same_person: ['s002=s005'] });
    expect(JSON.parse(lines(apart.stdout)[0]!).same_person).toBeUndefined();
    // the operating points are read from the merged pools
    const fmr = lines(merged.stdout)
      .filter((l) => l.includes('{'))
      .map((l) => l.slice(l.indexOf('{')))
      .map((l) => JSON.parse(l) as { fmr?: number })
      .filter((o) => o.fmr !== undefined);
    expect(fmr.length).toBeGreaterThan(0);
  });

  it('refuses a malformed or unknown --same with a clear error and no stack trace', async () => {
    const malformed = await cli(
      'palm-lab/scripts/calibrate-threshold.ts',
      ['--same', 's002', set],
      {},
      60_000,
    );
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/--same takes <label>=<label>/);
    const unknown = await cli(
      'palm-lab/scripts/calibrate-threshold.ts',
      ['--same', 's002=s999', set],
      {},
      60_000,
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/s002=s999: no set holds both labels/);
    expect(unknown.stderr).not.toMatch(/\n\s+at /);
  });
});
