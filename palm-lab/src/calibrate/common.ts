import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from '@palmid/contracts/errors';
import type { CaptureMeasures } from '@palmid/palm/capture/capture-checks';
import { readImage } from '@palmid/palm/capture/image-io';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { PACKED_WORDS, packedDistance, packTemplate } from '@palmid/palm/match';
import { decodeTemplate } from '@palmid/palm/template';
import { InvalidArgumentError } from 'commander';
import { cachedExtract } from '../eval/cache.ts';
import { type Dataset, listDataset, mergeSameIdentities, type SameIdentity } from '../eval/dataset.ts';
import type { Extract } from '../eval/evaluate.ts';
import { palmExtract } from '../eval/extract.ts';
import { recordedSensor } from '../eval/sensor-hint.ts';
import { SENSOR_NAMES, type SensorName } from './committed.ts';

/** One constant re-derived: the figure its procedure optimises, the value it gives, the value in the code. */
export interface ConstantCheck {
  /** the constant as the code names it, e.g. `IMPOSTOR_MODELS.wide.p` */
  constant: string;
  /** the file that holds it */
  source: string;
  /** the figure the procedure optimised (or reads), on the sets given */
  figure: { name: string; value: number | null };
  recomputed: number | null;
  committed: number;
  /** the agreement rule, in words (e.g. `±0.0005`, `committed ≤ recomputed`) */
  tolerance: string;
  agrees: boolean;
  note?: string;
}

export interface SetSummary {
  dir: string;
  sensor: SensorName | null;
  subjects: number;
  images: number;
  /** images that gave what the stage reads (a template, or the capture measures) */
  used: number;
  same_person?: string[];
  excluded_identity_pairs?: string[];
}

export interface CalibrationReport {
  stage: string;
  /** how the committed value was derived, the procedure this run repeats */
  procedure: string;
  sets: SetSummary[];
  constants: ConstantCheck[];
  /** stage-specific numbers (per set fits, percentiles, operating points) */
  details: Record<string, unknown>;
}

export type Progress = (label: string, done: number, total: number) => void;

/** Options every stage takes (the command line's, parsed). */
export interface CalibrateOptions {
  /** one profile for every set, or one per set in the order of the folders */
  sensors?: SensorName[] | undefined;
  cache?: string | undefined;
  same?: SameIdentity[] | undefined;
  /** identity pairs whose cross pairs are left out of the impostor pairs (`a~b`) */
  excludePairs?: Array<[string, string]> | undefined;
  /** the folders hold cropped palm ROIs (threshold stage) */
  roi?: boolean | undefined;
  /** with `roi`: score pairs with the probe's rotation/zoom variants, as `palm eval --roi` (threshold stage) */
  variants?: boolean | undefined;
  /** liveness: check this profile's centres against every set (a profile without bona fide data of its own) */
  centresOf?: SensorName | undefined;
  /** with `variants`: the probe's rotations (default ROI_ROTATION_ANGLES; palm-lab/scripts/calibrate-threshold.ts) */
  rotations?: readonly number[] | undefined;
  onProgress?: Progress | undefined;
}

export interface CalibrationSet {
  dir: string;
  sensor: SensorName;
  dataset: Dataset;
  same: SameIdentity[];
  exclude: Array<[string, string]>;
}

/** `--sensor a[,b…]`: profile names. */
export function sensorList(v: string): SensorName[] {
  const names = v.split(',').map((s) => s.trim());
  for (const n of names)
    if (!(SENSOR_NAMES as readonly string[]).includes(n))
      throw new InvalidArgumentError(`--sensor: "${n}" is not a profile (${SENSOR_NAMES.join(', ')})`);
  return names as SensorName[];
}

/** `--exclude-pairs a~b[,c~d…]`: identity pairs (labels as `palm eval` prints them). */
export function pairList(v: string): Array<[string, string]> {
  return v.split(',').map((part) => {
    const m = /^\s*([^~\s][^~]*?)\s*~\s*([^~\s][^~]*?)\s*$/.exec(part);
    if (!m || m[1] === m[2])
      throw new InvalidArgumentError(
        `--exclude-pairs takes <label>~<label>[,…] with two different labels, got "${part}"`,
      );
    return [m[1]!, m[2]!];
  });
}

/**
 * Lists every folder before any work: an unreadable or empty folder, a sensor list of the wrong
 * length, or a `--same` / `--exclude-pairs` naming labels no set holds is bad usage
 * (InvalidArgumentError, exit 2). Each set takes the merges and exclusions whose labels it holds.
 */
export async function loadSets(dirs: string[], o: CalibrateOptions): Promise<CalibrationSet[]> {
  if (dirs.length === 0) throw new InvalidArgumentError('give at least one dataset folder');
  const sensors = o.sensors ?? [];
  if (sensors.length > 1 && sensors.length !== dirs.length)
    throw new InvalidArgumentError(
      `--sensor lists ${sensors.length} profiles for ${dirs.length} folder(s): give one, or one per folder`,
    );
  const sets: CalibrationSet[] = [];
  const usedSame = new Set<SameIdentity>();
  const usedExclude = new Set<[string, string]>();
  for (const [i, dir] of dirs.entries()) {
    let listed: Dataset;
    try {
      listed = await listDataset(dir);
    } catch (err) {
      if (err instanceof AppError) throw new InvalidArgumentError(`${dir}: ${err.message}`);
      throw err;
    }
    if (listed.subjects.length === 0 || listed.subjects.every((s) => s.files.length === 0))
      throw new InvalidArgumentError(
        `${dir}: no images found (expected <dir>/<identity>/<image>, e.g. a <casia-dir> or <coep-dir>)`,
      );
    const names = new Set(listed.subjects.map((s) => s.name));
    const same = (o.same ?? []).filter((m) => names.has(m.into) && names.has(m.from));
    for (const m of same) usedSame.add(m);
    let dataset = listed;
    if (same.length > 0)
      try {
        dataset = mergeSameIdentities(listed, same);
      } catch (err) {
        if (err instanceof AppError) throw new InvalidArgumentError(`${dir}: ${err.message}`);
        throw err;
      }
    const merged = new Set(dataset.subjects.map((s) => s.name));
    const exclude = (o.excludePairs ?? []).filter(([a, b]) => merged.has(a) && merged.has(b));
    for (const p of exclude) usedExclude.add(p);
    const sensor =
      sensors.length === 1 ? sensors[0]! : (sensors[i] ?? (await recordedSensor(dir)) ?? 'simulator');
    sets.push({ dir, sensor, dataset, same, exclude });
  }
  const lostSame = (o.same ?? []).filter((m) => !usedSame.has(m));
  if (lostSame.length > 0)
    throw new InvalidArgumentError(
      `--same ${lostSame.map((m) => `${m.into}=${m.from}`).join(',')}: no set holds both labels`,
    );
  const lostPairs = (o.excludePairs ?? []).filter((p) => !usedExclude.has(p));
  if (lostPairs.length > 0)
    throw new InvalidArgumentError(
      `--exclude-pairs ${lostPairs.map(([a, b]) => `${a}~${b}`).join(',')}: no set holds both labels`,
    );
  return sets;
}

export function setSummary(set: CalibrationSet, used: number, roi = false): SetSummary {
  return {
    dir: set.dir,
    sensor: roi ? null : set.sensor,
    subjects: set.dataset.subjects.length,
    images: set.dataset.subjects.reduce((n, s) => n + s.files.length, 0),
    used,
    ...(set.same.length > 0 ? { same_person: set.same.map((m) => `${m.into}=${m.from}`) } : {}),
    ...(set.exclude.length > 0 ? { excluded_identity_pairs: set.exclude.map(([a, b]) => `${a}~${b}`) } : {}),
  };
}

/**
 * The extraction `palm eval` runs on the set (whole frames under the set's profile, or cropped ROIs
 * with the plain distance), through `palm eval --cache`'s cache and key when `cache` is given: a
 * cache filled by `palm eval --cache` serves the calibration and the other way round.
 */
export function templateExtract(set: CalibrationSet, o: CalibrateOptions): Extract {
  const opts = o.roi ? { roi: true, rotations: [0] } : { sensor: set.sensor };
  const extract = palmExtract(opts);
  if (!o.cache) return extract;
  const key = JSON.stringify({
    roi: o.roi === true,
    rotations: o.roi ? [0] : [],
    sensor: o.roi ? null : set.sensor,
  });
  return cachedExtract(extract, o.cache, key);
}

export interface PairDistances {
  genuine: Float64Array;
  impostor: Float64Array;
  /** impostor pairs left out because their identities are an excluded pair */
  excluded: number;
  enrolled: number;
}

/**
 * Genuine and impostor distances of a set exactly as `palm eval` pools them (evaluate.ts): every
 * enrolled image against every later one, plain distance, impostor pairs sampled with the same
 * fixed stride beyond `maxImpostorPairs` (5 M, `palm eval`'s default). The pairs of an excluded
 * identity pair are then left out of the impostor pool.
 */
export async function pairDistances(
  set: CalibrationSet,
  o: CalibrateOptions,
  maxImpostorPairs = 5_000_000,
): Promise<PairDistances> {
  const extract = templateExtract(set, o);
  const files = set.dataset.subjects.flatMap((s, si) => s.files.map((file) => ({ file, subject: si })));
  const packed: Array<{ subject: number; words: Uint32Array }> = [];
  for (const [i, f] of files.entries()) {
    let r: Awaited<ReturnType<Extract>>;
    try {
      r = await extract(f.file);
    } catch (err) {
      r = { reason: err instanceof Error ? err.message : String(err) };
    }
    if ('template' in r) packed.push({ subject: f.subject, words: packTemplate(decodeTemplate(r.template)) });
    o.onProgress?.(`coding ${set.dir}`, i + 1, files.length);
  }
  const n = packed.length;
  const all = new Uint32Array(n * PACKED_WORDS);
  for (const [i, p] of packed.entries()) all.set(p.words, i * PACKED_WORDS);
  const names = set.dataset.subjects.map((s) => s.name);
  const skip = new Set(set.exclude.flatMap(([a, b]) => [`${a}\0${b}`, `${b}\0${a}`]));
  let impostorTotal = 0;
  for (let i = 0; i < n; i++)
    for (let j = i + 1; j < n; j++) if (packed[i]!.subject !== packed[j]!.subject) impostorTotal++;
  const stride = Math.max(1, Math.ceil(impostorTotal / maxImpostorPairs));
  const genuine: number[] = [];
  const impostor: number[] = [];
  let excluded = 0;
  let impIndex = 0;
  const totalPairs = (n * (n - 1)) / 2;
  let done = 0;
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const same = packed[i]!.subject === packed[j]!.subject;
      if (!same && impIndex++ % stride !== 0) continue;
      const d = packedDistance(all, i * PACKED_WORDS, all, j * PACKED_WORDS);
      if (same) genuine.push(d);
      else if (skip.size > 0 && skip.has(`${names[packed[i]!.subject]}\0${names[packed[j]!.subject]}`))
        excluded++;
      else impostor.push(d);
    }
    done += n - i - 1;
    if (i % 16 === 0 || i === n - 1) {
      o.onProgress?.(`matching ${set.dir}`, done, totalPairs);
      // let the progress bar's timer draw: the loop is synchronous otherwise
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return {
    genuine: Float64Array.from(genuine),
    impostor: Float64Array.from(impostor),
    excluded,
    enrolled: n,
  };
}

export type Measures = Partial<CaptureMeasures>;

/**
 * The capture measures of every image of the set under its profile (`processCapture`'s
 * `measures`, also of a refused capture as far as it got), cached per image in `cache` beside the
 * templates (the key is the image's bytes, "measures" and the profile).
 */
export async function measureSet(set: CalibrationSet, o: CalibrateOptions): Promise<Measures[]> {
  const files = set.dataset.subjects.flatMap((s) => s.files);
  const out: Measures[] = [];
  let made = false;
  for (const [i, file] of files.entries()) {
    let m: Measures | undefined;
    let path: string | undefined;
    if (o.cache) {
      try {
        const bytes = await readFile(file);
        const id = createHash('sha256')
          .update(bytes)
          .update(`\0${JSON.stringify({ measures: true, sensor: set.sensor })}`)
          .digest('hex')
          .slice(0, 32);
        path = join(o.cache, `${id}.json`);
        m = (JSON.parse(await readFile(path, 'utf8')) as { measures: Measures }).measures;
      } catch {
        m = undefined;
      }
    }
    if (!m) {
      try {
        const r = await processCapture(await readImage(file), { sensor: set.sensor });
        m = r.measures ?? {};
      } catch {
        m = {};
      }
      if (path) {
        if (!made) {
          await mkdir(o.cache!, { recursive: true });
          made = true;
        }
        const tmp = `${path}.${process.pid}.tmp`;
        await writeFile(tmp, JSON.stringify({ measures: m }));
        await rename(tmp, path);
      }
    }
    out.push(m);
    o.onProgress?.(`measuring ${set.dir}`, i + 1, files.length);
  }
  return out;
}

/** Nearest-rank percentile (as `palm eval`'s metrics), NaN when empty. */
export function percentileOf(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

export const sig = (x: number, d = 4) => (Number.isFinite(x) ? Number(x.toPrecision(d)) : null);
