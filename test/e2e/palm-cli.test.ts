import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, tempDir } from './harness.ts';

/**
 * `npm run palm -- eval <dir> --roi --json --plot det.png` as the judges run it: a real process on a
 * `<dir>/<subject>/<image>` tree of cropped ROI images, with junk mixed in (docs/palm-pipeline.md, "Commands").
 */
describe('npm run palm -- eval (ROI databases)', () => {
  const tmp = tempDir('palmid-palm-cli-');
  const set = join(tmp.dir, 'rois');

  beforeAll(async () => {
    const made = await cli(
      'agent/scripts/make-roi-set.ts',
      [
        set,
        '--style',
        'contact',
        '--subjects',
        '6',
        '--per-session',
        '2',
        '--format',
        'bmp',
        '--seed',
        'clitest',
      ],
      {},
      120_000,
    );
    expect(made.code, made.stderr).toBe(0);
    const first = join(set, (await import('node:fs')).readdirSync(set).sort()[0]!);
    writeFileSync(join(first, 'broken.bmp'), Buffer.from('BM not really a bitmap'));
    writeFileSync(join(first, 'empty.jpg'), Buffer.alloc(0));
    writeFileSync(join(first, 'Thumbs.db'), Buffer.from('junk'));
    mkdirSync(join(set, '.hidden'), { recursive: true });
  }, 180_000);
  afterAll(() => tmp.remove());

  it('prints the contract JSON on stdout, lists unreadable images on stderr and writes the DET plot', async () => {
    const plot = join(tmp.dir, 'det.png');
    const r = await cli(
      'agent/src/palm/cli.ts',
      ['eval', set, '--roi', '--json', '--plot', plot],
      {},
      180_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as Record<string, number>;
    expect(Object.keys(report)).toEqual(
      expect.arrayContaining([
        'subjects',
        'images',
        'genuine_pairs',
        'impostor_pairs',
        'eer',
        'frr_at_far_1e3',
        'frr_at_far_1e4',
        'extract_ms_p50',
        'match_us_p50',
      ]),
    );
    // 6 subjects × 4 images + the 2 unreadable ones (Thumbs.db and hidden folders are not images); pairs
    // over the 24 that enrolled: every within-subject pair is genuine, every cross-subject pair an impostor
    expect(report).toMatchObject({ subjects: 6, images: 26, genuine_pairs: 36, impostor_pairs: 240 });
    expect(report.eer).toBeLessThan(0.05);
    expect(r.stderr).toMatch(/2 image\(s\) failed to enrol/);
    expect(r.stderr).toMatch(/broken\.bmp/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(existsSync(plot)).toBe(true);
    expect(readFileSync(plot).subarray(1, 4).toString()).toBe('PNG');
  }, 180_000);

  it('a directory that does not exist is one clear line and exit code ≠ 0', async () => {
    const r = await cli('agent/src/palm/cli.ts', ['eval', join(tmp.dir, 'nope'), '--roi', '--json']);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/nope/);
  }, 60_000);
});
