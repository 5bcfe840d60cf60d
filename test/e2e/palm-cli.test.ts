import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeBmp8 } from '@palmid/palm/capture/image-write';
import { MATCH_THRESHOLDS } from '@palmid/palm/threshold';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sideless } from '../support/sideless-hand.ts';
import { randomTemplate } from '../support/templates.ts';
import { cli, makeRoiSet, tempDir } from './harness.ts';

/**
 * `npm run palm -- eval <dir> --roi --json --plot det.png` as the judges run it: a real process on a
 * `<dir>/<subject>/<image>` tree of cropped ROI images, with junk mixed in (docs/palm-pipeline.md, "Commands").
 */
describe('npm run palm -- eval (ROI databases)', () => {
  const tmp = tempDir('palmid-palm-cli-');
  const set = join(tmp.dir, 'rois');

  beforeAll(async () => {
    await makeRoiSet(set, 6, 'bmp', 'clitest');
    const first = join(set, (await import('node:fs')).readdirSync(set).sort()[0]!);
    writeFileSync(join(first, 'broken.bmp'), Buffer.from('BM not really a bitmap'));
    writeFileSync(join(first, 'empty.jpg'), Buffer.alloc(0));
    writeFileSync(join(first, 'Thumbs.db'), Buffer.from('junk'));
    mkdirSync(join(set, '.hidden'), { recursive: true });
  }, 180_000);
  afterAll(() => tmp.remove());

  it('prints the contract JSON on stdout, lists unreadable images on stderr and writes the DET plot', async () => {
    const plot = join(tmp.dir, 'det.png');
    const r = await cli('palm-lab/src/cli.ts', ['eval', set, '--roi', '--json', '--plot', plot], {}, 180_000);
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
    // open-set identification (issue #24): one row per gallery size through the shared decision, the
    // bar rising with the gallery (evidence in decades) and falling on the raw distance
    const open = JSON.parse(r.stdout) as {
      open_set: Array<Record<string, unknown>>;
      impostor_model: {
        moments: { p: number; dof: number };
        tail: { p: number; dof: number };
        check: unknown[];
      };
      open_set_protocol: { target_fpir: number; presentations: number };
    };
    expect(open.open_set.map((row) => row.gallery)).toEqual([1e3, 1e4, 1e5, 1e6]);
    for (const row of open.open_set) {
      expect(Object.keys(row)).toEqual(
        expect.arrayContaining([
          'gallery',
          'threshold',
          'distance',
          'fpir',
          'fpir_method',
          'fnir',
          'fnir_step_up',
        ]),
      );
      expect(['measured', 'extrapolated']).toContain(row.fpir_method);
      for (const k of [
        'fpir',
        'fnir',
        'fnir_step_up',
        'fpir_step_up',
        'step_up_rate',
        'enrolled_as_another',
      ]) {
        expect(row[k] as number).toBeGreaterThanOrEqual(0);
        expect(row[k] as number).toBeLessThanOrEqual(1);
      }
      expect(row.fnir_step_up as number).toBeLessThanOrEqual(row.fnir as number);
      expect(row.distance as number).toBeGreaterThan(0);
      expect(row.distance as number).toBeLessThan(0.5);
    }
    const bars = open.open_set.map((row) => row.threshold as number);
    const dists = open.open_set.map((row) => row.distance as number);
    for (let i = 1; i < bars.length; i++) {
      expect(bars[i]!).toBeGreaterThan(bars[i - 1]!);
      expect(dists[i]!).toBeLessThan(dists[i - 1]!);
    }
    expect(open.open_set_protocol).toMatchObject({ target_fpir: 1e-4, presentations: 18 }); // 6 palms × 3 probes
    expect(open.impostor_model.tail.p).toBeGreaterThan(0);
    expect(open.impostor_model.tail.dof).toBeGreaterThan(1);
    // failure to acquire: the 2 unreadable images, counted by reason
    const full = JSON.parse(r.stdout) as {
      enrolled: number;
      fta: number;
      failure_reasons: Record<string, number>;
      eer_ci95: [number, number];
      min_far: number;
    };
    expect(full.enrolled).toBe(24);
    expect(full.fta).toBeCloseTo(2 / 26, 5);
    expect(Object.values(full.failure_reasons).reduce((a, b) => a + b, 0)).toBe(2);
    expect(full.eer_ci95[0]).toBeLessThanOrEqual(report.eer!);
    expect(full.eer_ci95[1]).toBeGreaterThan(0);
    expect(full.min_far).toBeCloseTo(1 / 240, 6);
    expect(r.stderr).toMatch(/2 image\(s\) failed to enrol/);
    expect(r.stderr).toMatch(/broken\.bmp/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(existsSync(plot)).toBe(true);
    expect(readFileSync(plot).subarray(1, 4).toString()).toBe('PNG');
  }, 180_000);

  it('prints a readable summary by default, with the CompCode baseline and the ratio on request', async () => {
    const r = await cli('palm-lab/src/cli.ts', ['eval', set, '--roi', '--baseline'], {}, 180_000);
    expect(r.code, r.stderr).toBe(0);
    expect(() => JSON.parse(r.stdout)).toThrow(); // not JSON: the summary
    expect(r.stdout).toMatch(/^EER\s+\d+\.\d+ %\s+\(95 % CI \d+\.\d+ % – \d+\.\d+ %\)$/m);
    expect(r.stdout).toMatch(/^FRR at FAR 1e-3\s+/m);
    expect(r.stdout).toMatch(/^FRR at FAR 1e-4\s+not measured: 240 impostor pairs/m);
    // the worst failure reasons are named
    expect(r.stdout).toMatch(/^failure to enrol\s+7\.69 % \(2 image\(s\)\): \w+ [12]/m);
    expect(r.stdout).toMatch(/^images\s+26 \(6 subjects\), 24 enrolled$/m);
    expect(r.stdout).toMatch(/^CompCode\s+EER /m);
    expect(r.stdout).toMatch(/^ratio\s+/m);
    // progress went to stderr, not into the report
    expect(r.stderr).toMatch(/palmid extracting .* 26\/26/);
    expect(r.stderr).toMatch(/CompCode matching .* \d+\/\d+/);
  }, 180_000);

  it('--baseline --json adds the baseline report and the EER ratio', async () => {
    const r = await cli('palm-lab/src/cli.ts', ['eval', set, '--roi', '--baseline', '--json'], {}, 180_000);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { baseline: Record<string, unknown>; baseline_eer_ratio: unknown };
    expect(report.baseline).toMatchObject({ name: 'CompCode', images: 26, enrolled: 24 });
    expect(typeof report.baseline.eer).toBe('number');
    expect('baseline_eer_ratio' in report).toBe(true);
  }, 180_000);

  it('a DET plot that cannot be written keeps the report: results first, then one error line, exit 1', async () => {
    const r = await cli(
      'palm-lab/src/cli.ts',
      ['eval', set, '--roi', '--json', '--plot', join(tmp.dir, 'no-such-dir', 'det.png')],
      {},
      180_000,
    );
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as { eer: number; genuine_pairs: number };
    expect(report.genuine_pairs).toBe(36);
    expect(typeof report.eer).toBe('number');
    expect(r.stderr).toMatch(/error: cannot write the DET plot to .*no-such-dir.*det\.png/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  }, 180_000);

  it('--baseline without --roi is bad usage (exit 2), as is an unknown option', async () => {
    const a = await cli('palm-lab/src/cli.ts', ['eval', set, '--baseline']);
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(/--baseline needs --roi/);
    const b = await cli('palm-lab/src/cli.ts', ['eval', set, '--no-such-option']);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/unknown option/);
    const c = await cli('palm-lab/src/cli.ts', ['synth', join(tmp.dir, 'x'), '--hand', 'middle']);
    expect(c.code).toBe(2);
    expect(c.stderr).toMatch(/--hand must be left, right or both/);
  }, 60_000);

  it('a directory that does not exist is one clear line and exit code ≠ 0', async () => {
    const r = await cli('palm-lab/src/cli.ts', ['eval', join(tmp.dir, 'nope'), '--roi', '--json']);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/nope/);
  }, 60_000);
});

/**
 * A set where nothing enrols (printed-photo attacks: the kiosk pipeline refuses every one) must
 * still be measurable: the report names the failures and the command exits 0.
 */
describe('npm run palm -- synth and eval on a set that does not enrol', () => {
  const tmp = tempDir('palmid-palm-fta-');
  const set = join(tmp.dir, 'attacks');

  it('synth shows its progress on stderr even when stderr is not a terminal', async () => {
    const r = await cli(
      'palm-lab/src/cli.ts',
      ['synth', set, '--identities', '2', '--captures', '2', '--attack', 'print', '--json'],
      {},
      120_000,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ images: 8 });
    expect(r.stderr).toMatch(/rendering .* 0\/8/);
    expect(r.stderr).toMatch(/rendering .* 8\/8 \(100 %\)/);
  }, 120_000);

  it('eval --json reports enrolled 0, fta 1 and the reasons, with null rates, and exits 0', async () => {
    const plot = join(tmp.dir, 'det.png');
    const r = await cli('palm-lab/src/cli.ts', ['eval', set, '--json', '--plot', plot], {}, 120_000);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({
      subjects: 4,
      images: 8,
      enrolled: 0,
      fta: 1,
      failure_reasons: { liveness_failed: 8 },
      genuine_pairs: 0,
      impostor_pairs: 0,
      eer: null,
      frr_at_far_1e4: null,
    });
    expect(readFileSync(plot).subarray(1, 4).toString()).toBe('PNG');
  }, 120_000);

  it('the summary says why nothing is measurable', async () => {
    const r = await cli('palm-lab/src/cli.ts', ['eval', set], {}, 120_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^failure to enrol\s+100\.00 % \(8 image\(s\)\): liveness_failed 8$/m);
    expect(r.stdout).toMatch(/^EER\s+not measurable/m);
  }, 120_000);

  it('synth --sensor colour writes colour frames; an unknown sensor is bad usage', async () => {
    const out = join(tmp.dir, 'colour');
    const r = await cli(
      'palm-lab/src/cli.ts',
      [
        'synth',
        out,
        '--identities',
        '1',
        '--captures',
        '1',
        '--hand',
        'right',
        '--sensor',
        'colour',
        '--json',
      ],
      {},
      120_000,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ sensor: 'colour', images: 1 });
    const { default: sharp } = await import('sharp');
    const meta = await sharp(join(out, 'id0001_right', '1.png')).metadata();
    expect(meta).toMatchObject({ width: 320, height: 240, channels: 3 });
    const bad = await cli('palm-lab/src/cli.ts', ['synth', out, '--sensor', 'thermal']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--sensor.*thermal/);
  }, 120_000);

  it('extract of a refused capture is a negative result: JSON with the reason, exit 1', async () => {
    const r = await cli('palm-lab/src/cli.ts', ['extract', join(set, 'id0001_left', '1.png')], {}, 60_000);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, reason: 'liveness_failed' });
  }, 60_000);

  afterAll(() => tmp.remove());
});

/**
 * Camera profiles accept a capture whose hand side cannot be decided (docs/palm-pipeline.md,
 * "Left/right"): `palm eval` counts it as enrolled, compares it with every other image and reports
 * how many there were (`unknown_side`).
 */
describe('npm run palm -- eval with captures of undecided hand side', () => {
  const tmp = tempDir('palmid-palm-side-');
  const set = join(tmp.dir, 'grey-dark');

  beforeAll(async () => {
    const made = await cli(
      'palm-lab/src/cli.ts',
      ['synth', set, '--identities', '2', '--captures', '2', '--hand', 'right', '--sensor', 'grey-dark'],
      {},
      120_000,
    );
    expect(made.code, made.stderr).toBe(0);
    // one more hand, two captures of it without a thumb, web or finger-width cue
    mkdirSync(join(set, 'sideless'), { recursive: true });
    for (const n of [0, 1])
      writeFileSync(join(set, 'sideless', `${n}.bmp`), encodeBmp8(await sideless('grey-dark', n)));
  }, 180_000);
  afterAll(() => tmp.remove());

  it('counts them as enrolled and compares them with every image; the simulator profile refuses them', async () => {
    const r = await cli('palm-lab/src/cli.ts', ['eval', set, '--sensor', 'grey-dark', '--json'], {}, 180_000);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({ subjects: 3, images: 6, enrolled: 6, unknown_side: 2, fta: 0 });
    // every pair of the 6 enrolled images: 3 genuine (one per hand), 12 impostor
    expect(report).toMatchObject({ genuine_pairs: 3, impostor_pairs: 12 });
    const summary = await cli('palm-lab/src/cli.ts', ['eval', set, '--sensor', 'grey-dark'], {}, 180_000);
    expect(summary.code, summary.stderr).toBe(0);
    expect(summary.stdout).toMatch(/^images\s+6 \(3 subjects\), 6 enrolled \(2 of undecided hand side/m);
    // the simulator profile mirrors left hands: it needs the side and refuses these two as partial
    const sim = await cli(
      'palm-lab/src/cli.ts',
      ['eval', set, '--sensor', 'simulator', '--json'],
      {},
      180_000,
    );
    expect(sim.code, sim.stderr).toBe(0);
    const simReport = JSON.parse(sim.stdout) as Record<string, unknown>;
    expect(simReport).toMatchObject({ unknown_side: 0 });
    expect(simReport.failure_reasons).toMatchObject({ partial: 2 });
    expect(sim.stderr).toMatch(/sideless\/0\.bmp: partial; .*sideless\/1\.bmp: partial/);
  }, 300_000);
});

/** `npm run palm -- match <a> <b>` on template files: the threshold and the comparison are the templates' coding's. */
describe('npm run palm -- match (template files of each coding)', () => {
  const tmp = tempDir('palmid-palm-match-');
  afterAll(() => tmp.remove());
  const file = (name: string, coding: 'wide' | 'fine') => {
    const path = join(tmp.dir, name);
    writeFileSync(path, Buffer.from(randomTemplate(coding), 'base64'));
    return path;
  };

  it("matches within a coding at that coding's threshold, and refuses to compare two codings", async () => {
    const fine = file('fine.tpl', 'fine');
    const same = await cli('palm-lab/src/cli.ts', ['match', fine, fine]);
    expect(same.code, same.stderr).toBe(0);
    expect(JSON.parse(same.stdout)).toEqual({ score: 1, match: true, threshold: MATCH_THRESHOLDS.fine });
    const wide = file('wide.tpl', 'wide');
    const other = await cli('palm-lab/src/cli.ts', ['match', wide, wide]);
    expect(JSON.parse(other.stdout)).toMatchObject({ threshold: MATCH_THRESHOLDS.wide });
    const mixed = await cli('palm-lab/src/cli.ts', ['match', wide, fine]);
    expect(mixed.code).toBe(1);
    expect(mixed.stdout).toBe('');
    expect(mixed.stderr).toMatch(
      /is coded "wide" and .* "fine": templates of two codings cannot be compared/,
    );
  }, 60_000);
});
