import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, lastJson, tempDir } from './harness.ts';

/**
 * `npm run palm -- roi <dir> --out <outdir> [--sensor P]` as a process: every whole-hand frame of a
 * `<subject>/<image>` tree becomes a 128 × 128 PNG in the same layout, refusals are listed on
 * stderr with their reasons (docs/palm-pipeline.md, "Capture path on real hands").
 */
describe('npm run palm -- roi', () => {
  const tmp = tempDir('palmid-palm-roi-');
  const set = join(tmp.dir, 'frames');
  const out = join(tmp.dir, 'rois');

  beforeAll(async () => {
    const made = await cli(
      'palm-lab/src/cli.ts',
      ['synth', set, '--identities', '2', '--captures', '2', '--hand', 'right', '--seed', 'roicli'],
      {},
      120_000,
    );
    expect(made.code, made.stderr).toBe(0);
    const first = join(
      set,
      readdirSync(set, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
        .sort()[0]!,
    );
    await sharp(Buffer.alloc(320 * 240), { raw: { width: 320, height: 240, channels: 1 } })
      .png()
      .toFile(join(first, 'black.png'));
    writeFileSync(join(first, 'broken.png'), Buffer.from('not a png'));
  }, 180_000);
  afterAll(() => tmp.remove());

  it('writes the ROI of every accepted frame in the same layout and lists refusals on stderr', async () => {
    const r = await cli(
      'palm-lab/src/cli.ts',
      ['roi', set, '--out', out, '--sensor', 'simulator'],
      {},
      120_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const report = lastJson<{
      images: number;
      written: number;
      failed: number;
      failure_reasons: Record<string, number>;
    }>(r.stdout);
    expect(report).toMatchObject({ images: 6, written: 4, failed: 2 });
    expect(report.failure_reasons).toEqual({ no_hand: 1, unreadable: 1 });
    expect(r.stderr).toMatch(/black\.png: no_hand/);
    expect(r.stderr).toMatch(/broken\.png: unreadable/);
    const subjects = readdirSync(set, { withFileTypes: true }).filter((e) => e.isDirectory());
    for (const { name: subject } of subjects) {
      for (const c of ['1', '2']) {
        const png = join(out, subject, `${c}.png`);
        expect(existsSync(png), png).toBe(true);
        const meta = await sharp(png).metadata();
        expect([meta.width, meta.height, meta.channels]).toEqual([128, 128, 1]);
      }
    }
    expect(existsSync(join(out, readdirSync(set).sort()[0]!, 'black.png'))).toBe(false);
  }, 120_000);

  it('refuses an unknown sensor profile as bad usage, naming the profiles', async () => {
    const r = await cli('palm-lab/src/cli.ts', ['roi', set, '--out', out, '--sensor', 'bogus']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown sensor profile "bogus".*grey-dark/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('extracts under a camera profile (--sensor on extract)', async () => {
    const subject = readdirSync(set).sort()[1]!;
    const r = await cli('palm-lab/src/cli.ts', [
      'extract',
      join(set, subject, '1.png'),
      '--sensor',
      'colour',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(lastJson<{ ok: boolean; hand: string }>(r.stdout)).toMatchObject({ ok: true, hand: 'right' });
  });
});
