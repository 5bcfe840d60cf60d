import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, makeRoiSet, tempDir } from './harness.ts';

/**
 * `palm calibrate` as a process (docs/calibrate.md): the threshold stage on a small synthetic ROI
 * set (`--roi`, as MATCH_THRESHOLD was calibrated), its JSON report and exit codes.
 */
describe('palm calibrate (CLI)', () => {
  const tmp = tempDir('palmid-calibrate-cli-');
  const set = join(tmp.dir, 'rois');

  beforeAll(async () => {
    await makeRoiSet(set, 4, 'png', 'calcli');
  }, 180_000);
  afterAll(() => tmp.remove());

  it('prints the figure, the recomputed and the committed value as JSON and exits 0 even when they differ', async () => {
    const r = await cli(
      'palm-lab/src/cli.ts',
      ['calibrate', 'threshold', '--roi', '--json', set],
      {},
      180_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as {
      stage: string;
      constants: Array<{ constant: string; committed: number; agrees: boolean; figure: { name: string } }>;
      details: { genuine_pairs: number; impostor_pairs: number };
    };
    expect(report.stage).toBe('threshold');
    expect(report.constants[0]).toMatchObject({ constant: 'MATCH_THRESHOLD', agrees: false });
    expect(report.constants[0]!.figure.name).toMatch(/FMR at the committed threshold/);
    // 4 subjects × 4 crops: 24 genuine and 96 impostor pairs, too few for FMR 1e-4
    expect(report.details).toMatchObject({ genuine_pairs: 24, impostor_pairs: 96 });
  });

  it('--roi --variants derives ROI_MATCH_THRESHOLD from the variant search, as palm eval --roi scores', async () => {
    const r = await cli(
      'palm-lab/src/cli.ts',
      ['calibrate', 'threshold', '--roi', '--variants', '--json', set],
      {},
      180_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { constants: Array<{ constant: string; source: string }> };
    expect(report.constants[0]).toMatchObject({
      constant: 'ROI_MATCH_THRESHOLD',
      source: 'shared/palm/src/capture/roi-rotation.ts',
    });
    const alone = await cli('palm-lab/src/cli.ts', ['calibrate', 'threshold', '--variants', set]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--variants needs --roi/);
  });

  it('exits 2 with a one-line error on bad usage', async () => {
    const stage = await cli('palm-lab/src/cli.ts', ['calibrate', 'everything', set]);
    expect(stage.code).toBe(2);
    expect(stage.stderr).toMatch(/Allowed choices are decision, threshold, quality, liveness/);
    const dir = await cli('palm-lab/src/cli.ts', ['calibrate', 'quality', join(tmp.dir, 'nowhere')]);
    expect(dir.code).toBe(2);
    expect(dir.stderr).toMatch(/Cannot read dataset directory/);
    expect(dir.stderr).not.toMatch(/\n\s+at /);
  });
});
