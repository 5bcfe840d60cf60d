import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmrAt } from '@palmid/palm/decision';
import { fitImpostorModel } from '@palmid/palm/impostor-fit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../cli.ts';
import { checkBounds, type MeasuredSet } from './bounds.ts';
import { calibrate, formatReport } from './command.ts';
import { IMPOSTOR_MODELS, MATCH_THRESHOLD, SENSOR_PROFILES } from './committed.ts';

const DEFAULT_IMPOSTOR_MODEL = IMPOSTOR_MODELS.wide;

import { type CalibrationSet, pairList, sensorList } from './common.ts';
import { barDistance } from './decision.ts';
import { QUALITY_SPECS } from './quality.ts';
import { pointAt, ratesAt } from './threshold.ts';

/**
 * `palm calibrate` on synthetic data: small `palm synth` sets in a temp folder (whole simulator
 * frames), and the stages' arithmetic on generated numbers.
 */
let root: string;
let set: string;
/** the set's impostor pairs, as the first decision test counts them */
let allImpostors = 0;

/** Runs the CLI in-process: its stdout, stderr and exit code. */
async function palm(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
    out.push(String(s));
    return true;
  });
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((s) => {
    err.push(String(s));
    return true;
  });
  process.exitCode = undefined;
  try {
    await main(['node', 'palm', ...args]);
    return { stdout: out.join('\n'), stderr: err.join('\n'), code: process.exitCode ?? 0 };
  } finally {
    process.exitCode = undefined;
    log.mockRestore();
    error.mockRestore();
    write.mockRestore();
    stderr.mockRestore();
  }
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'palm-calibrate-'));
  set = join(root, 'synth');
  const r = await palm('synth', set, '--identities', '3', '--captures', '3', '--json');
  expect(r.code).toBe(0);
}, 120_000);
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('palm calibrate on a synthetic set', () => {
  it('decision: the recomputed model is the tail fit of the pairs it counted, compared with the committed one', async () => {
    const r = await calibrate('decision', [set], { cache: join(root, 'cache') });
    expect(r.stage).toBe('decision');
    expect(r.sets[0]).toMatchObject({ dir: set, sensor: 'simulator', subjects: 6, images: 18 });
    const [p, dof] = r.constants;
    // the simulator codes `wide`: its committed model is that coding's
    expect(p!.constant).toBe('IMPOSTOR_MODELS.wide.p');
    expect(p!.committed).toBe(DEFAULT_IMPOSTOR_MODEL.p);
    expect(dof!.committed).toBe(DEFAULT_IMPOSTOR_MODEL.dof);
    const fit = (r.details.fits as Array<{ tail: { p: number; dof: number }; impostor_pairs: number }>)[0]!;
    expect(p!.recomputed).toBe(fit.tail.p);
    expect(dof!.recomputed).toBe(fit.tail.dof);
    expect(p!.agrees).toBe(Math.abs(fit.tail.p - DEFAULT_IMPOSTOR_MODEL.p) <= 0.0005);
    // six identities of three images each: at most 15 × 9 impostor pairs (a refused frame has none)
    expect(r.sets[0]!.used).toBeGreaterThan(12);
    expect(fit.impostor_pairs).toBeGreaterThan(60);
    expect(fit.impostor_pairs).toBeLessThanOrEqual(135);
    allImpostors = fit.impostor_pairs;
    // the cache serves a second run with the same numbers
    const again = await calibrate('decision', [set], { cache: join(root, 'cache') });
    expect(again.constants).toEqual(r.constants);
  });

  it('decision: --exclude-pairs leaves out exactly the cross pairs of the identity pair', async () => {
    const r = await calibrate('decision', [set], { excludePairs: [['id0001_left', 'id0002_left']] });
    const fit = (r.details.fits as Array<{ impostor_pairs: number; excluded_impostor_pairs: number }>)[0]!;
    // at most the 3 × 3 cross pairs of the two identities, and the rest unchanged
    expect(fit.excluded_impostor_pairs).toBeGreaterThan(0);
    expect(fit.excluded_impostor_pairs).toBeLessThanOrEqual(9);
    expect(fit.impostor_pairs + fit.excluded_impostor_pairs).toBe(allImpostors);
    expect(r.sets[0]!.excluded_identity_pairs).toEqual(['id0001_left~id0002_left']);
  });

  it('threshold: FMR at the committed threshold and the operating points read from the pooled pairs', async () => {
    const r = await calibrate('threshold', [set, set], {}, { at: [0.3] });
    const c = r.constants[0]!;
    expect(c.constant).toBe('MATCH_THRESHOLD');
    expect(c.committed).toBe(MATCH_THRESHOLD);
    // two copies of the set pool twice its pairs, too few to resolve FMR 1e-4
    expect(r.details).toMatchObject({ impostor_pairs: 2 * allImpostors });
    expect(c.recomputed).toBeNull();
    expect(c.agrees).toBe(false);
    expect(c.note).toMatch(/cannot resolve FMR/);
    expect((r.details.at as Array<{ threshold: number }>).map((a) => a.threshold)).toEqual([
      MATCH_THRESHOLD,
      0.3,
    ]);
  });

  it('quality and liveness: each limit the profile uses against the bona fide tail, with the rejection rate', async () => {
    const q = await calibrate('quality', [set], { cache: join(root, 'cache') });
    expect(q.constants.map((c) => c.constant)).toEqual(
      QUALITY_SPECS.map((s) => `SENSOR_PROFILES[simulator].limits.${s.name}`),
    );
    for (const c of q.constants) {
      expect(c.committed).toBe(
        SENSOR_PROFILES.simulator.limits[c.constant.split('.').at(-1) as 'minSharpness'],
      );
      expect(c.figure.value).toBeGreaterThanOrEqual(0);
      expect(c.figure.value).toBeLessThanOrEqual(1);
    }
    const l = await calibrate('liveness', [set], { cache: join(root, 'cache') });
    // the simulator reads all three cues
    expect(l.constants.map((c) => c.constant.split('.').at(-1))).toEqual([
      'maxPeriodicity',
      'maxFalloff',
      'minContrast',
    ]);
    expect(formatReport(l)).toMatch(/bona fide rejection rate at the cue centre/);
  });

  it('liveness --centres-of: another profile’s centres against these sets, only the cues that profile reads', async () => {
    const r = await calibrate('liveness', [set], { cache: join(root, 'cache'), centresOf: 'contact-nir' });
    expect(r.constants.map((c) => c.constant)).toEqual([
      'SENSOR_PROFILES[contact-nir].centres.maxPeriodicity',
      'SENSOR_PROFILES[contact-nir].centres.minContrast',
    ]);
    expect(r.constants.map((c) => c.committed)).toEqual([
      SENSOR_PROFILES['contact-nir'].centres.maxPeriodicity,
      SENSOR_PROFILES['contact-nir'].centres.minContrast,
    ]);
    // the simulator's note belongs to the simulator's centres only
    for (const c of r.constants) expect(c.note).not.toMatch(/logistic regression/);
  });
});

describe('the stages’ arithmetic', () => {
  it('pointAt reads the impostor distance at rank ⌊FMR · n⌋ and the FNMR there; ratesAt the rates at a score', () => {
    const impostor = Float64Array.from({ length: 1000 }, (_, i) => 0.3 + i * 1e-4);
    const genuine = Float64Array.from([0.1, 0.2, 0.3005, 0.31]);
    expect(pointAt(impostor, genuine, 1e-2)).toEqual({
      fmr: 1e-2,
      distance: 0.301,
      score: 0.398,
      fnmr: 0.25,
    });
    expect(pointAt(impostor, genuine, 1e-4)).toBeNull();
    // score 0.398 ↔ distance 0.301: ten impostor distances below it
    expect(ratesAt(impostor, genuine, 0.398)).toEqual({ threshold: 0.398, fmr: 0.01, fnmr: 0.25 });
  });

  it('the heavier model (more FMR at every tail distance) has its 1e6 bar at the smaller distance', () => {
    const light = { p: 0.4284, dof: 475.4 };
    for (const d of [0.28, 0.3, 0.32, 0.3375])
      expect(fmrAt(d, DEFAULT_IMPOSTOR_MODEL)).toBeGreaterThan(fmrAt(d, light));
    expect(barDistance(DEFAULT_IMPOSTOR_MODEL)).toBeLessThan(barDistance(light));
  });

  it('a tail fit on binomial distances finds their model (the procedure the decision stage repeats)', () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const n = 400;
    const d: number[] = [];
    for (let k = 0; k < 20_000; k++) {
      let x = 0;
      for (let i = 0; i < n; i++) if (rand() < 0.43) x++;
      d.push(x / n);
    }
    const fit = fitImpostorModel(d);
    expect(fit.tail.p).toBeCloseTo(0.43, 1);
    expect(fit.tail_rms_decades.tail).toBeLessThan(0.1);
  });

  it('checkBounds: a lower limit agrees at or below the 0.5th percentile, and the figure counts what it refuses', () => {
    const fake = (dir: string, sharpness: number[]): MeasuredSet => ({
      set: { dir, sensor: 'grey-dark', dataset: { subjects: [] }, same: [], exclude: [] } as CalibrationSet,
      measures: sharpness.map((s) => ({ sharpness: s })),
    });
    const a = fake(
      'a',
      Array.from({ length: 200 }, (_, i) => 0.2 + i / 1000),
    );
    const b = fake(
      'b',
      Array.from({ length: 200 }, (_, i) => 0.1 + i / 1000),
    );
    const { constants } = checkBounds(
      [a, b],
      QUALITY_SPECS.filter((s) => s.name === 'minSharpness'),
      'x.ts',
      (s) => s.join('|'),
    );
    const c = constants[0]!;
    expect(c.committed).toBe(SENSOR_PROFILES['grey-dark'].limits.minSharpness);
    // the lowest 0.5th percentile over the sets: b's second value
    expect(c.recomputed).toBeCloseTo(0.101, 6);
    expect(c.agrees).toBe(c.committed <= 0.101);
    // committed 0.12: b's 20 values below it, of 400
    expect(c.figure.value).toBe(0.05);
  });
});

describe('palm calibrate, the command', () => {
  it('prints the report as JSON and exits 0 whether or not the values agree', async () => {
    const r = await palm('calibrate', 'liveness', set, '--json');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { stage: string; constants: Array<{ agrees: boolean }> };
    expect(report.stage).toBe('liveness');
    expect(report.constants.length).toBe(3);
  });

  it('refuses bad usage with exit 2 and a clear message', async () => {
    const stage = await palm('calibrate', 'everything', set);
    expect(stage.code).toBe(2);
    expect(stage.stderr).toMatch(/Allowed choices are decision, threshold, quality, liveness/);
    const missing = await palm('calibrate', 'quality', join(root, 'nowhere'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/Cannot read dataset directory/);
    const empty = join(root, 'empty');
    await mkdir(join(empty, 'a'), { recursive: true });
    const none = await palm('calibrate', 'quality', empty);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/needs at least two <subject>\/ folders/);
    const sensors = await palm('calibrate', 'quality', set, set, set, '--sensor', 'grey-dark,colour');
    expect(sensors.code).toBe(2);
    expect(sensors.stderr).toMatch(/2 profiles for 3 folder/);
    // two template codings (simulator `wide`, grey-dark `fine`) have two models: one at a time
    const codings = await palm('calibrate', 'decision', set, set, '--sensor', 'simulator,grey-dark');
    expect(codings.code).toBe(2);
    expect(codings.stderr).toMatch(
      /code templates differently \(wide, fine\): calibrate one coding at a time/,
    );
    const unknown = await palm('calibrate', 'decision', set, '--exclude-pairs', 'x~y');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/x~y: no set holds both labels/);
    const misplaced = await palm('calibrate', 'quality', set, '--centres-of', 'contact-nir');
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toMatch(/--centres-of belongs to the liveness stage/);
    const help = await palm('calibrate', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/decision .*impostor model/);
  });

  it('parses its lists', () => {
    expect(sensorList('grey-dark,colour')).toEqual(['grey-dark', 'colour']);
    expect(() => sensorList('grey-dark,webcam')).toThrow(/"webcam" is not a profile/);
    expect(pairList('077~153, 085~154')).toEqual([
      ['077', '153'],
      ['085', '154'],
    ]);
    expect(() => pairList('077')).toThrow(/<label>~<label>/);
  });
});
