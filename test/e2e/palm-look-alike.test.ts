import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, makeRoiSet, refileSecondSession, tempDir } from './harness.ts';

/**
 * `npm run palm -- look-alike <dir>` as a curator runs it: a real process on a `<dir>/<subject>/<image>`
 * tree in which one subject's second session was filed under a new label (docs/palm-pipeline.md,
 * "Look-alike identities").
 */
describe('npm run palm -- look-alike', () => {
  const tmp = tempDir('palmid-look-alike-');
  const set = join(tmp.dir, 'rois');

  beforeAll(async () => {
    await makeRoiSet(set, 6, 'png', 'lookalike');
    // s003's second session becomes "s007": one palm under two labels
    refileSecondSession(set, 's003', 's007');
  }, 180_000);
  afterAll(() => tmp.remove());

  it('names the two labels of one palm first and flags only them, in JSON', async () => {
    const r = await cli(
      'palm-lab/src/cli.ts',
      ['look-alike', set, '--roi', '--json', '--top', '3'],
      {},
      180_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as {
      matcher: string;
      identities: number;
      images: number;
      flagged: number;
      closest: Array<{ a: string; b: string; pairs: number; looks_genuine: boolean; robust_z: number }>;
    };
    expect(report.matcher).toBe('palmid');
    expect(report.identities).toBe(7);
    expect(report.images).toBe(24);
    expect(report.closest).toHaveLength(3);
    expect(report.closest[0]).toMatchObject({ a: 's003', b: 's007', pairs: 4, looks_genuine: true });
    expect(report.flagged).toBe(1);
    expect(report.closest[1]!.looks_genuine).toBe(false);
    // only labels and aggregates: no file name reaches the report
    expect(r.stdout).not.toMatch(/\.png/);
  }, 180_000);

  it('eval --same counts the two labels as one person: their cross pairs become genuine pairs', async () => {
    const read = async (extra: string[]) => {
      const r = await cli(
        'palm-lab/src/cli.ts',
        ['eval', set, '--roi', '--rotations', '0', '--json', ...extra],
        {},
        180_000,
      );
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as {
        subjects: number;
        genuine_pairs: number;
        impostor_pairs: number;
        same_person?: string[];
      };
    };
    const apart = await read([]);
    const merged = await read(['--same', 's003=s007']);
    // 24 images: 5 subjects of 4 and two labels of 2; merged, 6 subjects of 4
    expect(apart).toMatchObject({ subjects: 7, genuine_pairs: 32, impostor_pairs: 244 });
    expect(merged).toMatchObject({
      subjects: 6,
      genuine_pairs: 36,
      impostor_pairs: 240,
      same_person: ['s003=s007'],
    });
    expect(apart.same_person).toBeUndefined();
    const unknown = await cli(
      'palm-lab/src/cli.ts',
      ['eval', set, '--roi', '--same', 's003=s999'],
      {},
      60_000,
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/"s999", which is no identity/);
    // repeated --same options add up
    const twice = await read(['--same', 's003=s007', '--same', 's001=s002']);
    expect(twice).toMatchObject({ subjects: 5, same_person: ['s003=s007', 's001=s002'] });
    const malformed = await cli('palm-lab/src/cli.ts', ['eval', set, '--roi', '--same', 's003'], {}, 60_000);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/--same takes <label>=<label>/);
  }, 180_000); // five CLI runs one after the other

  it('prints the table by default and refuses --baseline without --roi', async () => {
    const table = await cli(
      'palm-lab/src/cli.ts',
      ['look-alike', set, '--roi', '--baseline', '--top', '2'],
      {},
      180_000,
    );
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/\(CompCode\)/);
    expect(table.stdout).toMatch(/s003 \/ s007 .*LOOKS GENUINE/);
    expect(table.stdout).toMatch(/palm eval \S+ --same s003=s007\n/);
    const bad = await cli('palm-lab/src/cli.ts', ['look-alike', set, '--baseline'], {}, 60_000);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--baseline needs --roi/);
    const missing = await cli('palm-lab/src/cli.ts', ['look-alike', join(tmp.dir, 'nope')], {}, 60_000);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/Cannot read dataset directory/);
  }, 180_000);
});
