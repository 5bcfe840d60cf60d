import { cachedExtract } from '../eval/cache.ts';
import { evaluate } from '../eval/evaluate.ts';
import { palmExtract } from '../eval/extract.ts';
import { MATCH_THRESHOLD, ROI_MATCH_THRESHOLD, ROI_ROTATION_ANGLES, TARGET_FMR } from './committed.ts';
import {
  type CalibrateOptions,
  type CalibrationReport,
  type CalibrationSet,
  pairDistances,
  type SetSummary,
  setSummary,
  sig,
} from './common.ts';

/** Agreement: the recomputed score within ±SCORE_TOL of the committed threshold. */
export const SCORE_TOL = 0.01;

/** FMR levels printed beside the target (as palm-lab/scripts/calibrate-threshold.ts did). */
const LEVELS = [1e-3, 1e-4, 1e-5];

export interface OperatingPoint {
  fmr: number;
  distance: number;
  score: number;
  fnmr: number;
}

/**
 * The score threshold at an FMR read from pooled impostor distances the way
 * calibrate-threshold.ts always read it: the impostor distance at rank ⌊fmr · n⌋ (ascending),
 * with the FNMR there (genuine pairs at or beyond that distance). Null when the set cannot resolve it.
 */
export function pointAt(
  sortedImpostor: Float64Array,
  genuine: Float64Array,
  fmr: number,
): OperatingPoint | null {
  const k = Math.floor(fmr * sortedImpostor.length);
  if (sortedImpostor.length === 0 || k < 1) return null;
  const t = sortedImpostor[k]!;
  let rejected = 0;
  for (const g of genuine) if (g >= t) rejected++;
  return {
    fmr,
    distance: sig(t, 4)!,
    score: sig(1 - 2 * t, 4)!,
    fnmr: genuine.length === 0 ? 0 : sig(rejected / genuine.length, 4)!,
  };
}

/** FMR and FNMR at a score threshold (accept when score ≥ threshold, i.e. distance ≤ (1 − score) / 2). */
export function ratesAt(impostor: Float64Array, genuine: Float64Array, score: number) {
  const d = (1 - score) / 2;
  let fm = 0;
  for (const x of impostor) if (x < d) fm++;
  let fnm = 0;
  for (const g of genuine) if (g >= d) fnm++;
  return {
    threshold: score,
    fmr: impostor.length === 0 ? null : sig(fm / impostor.length, 3),
    fnmr: genuine.length === 0 ? null : sig(fnm / genuine.length, 4),
  };
}

export interface PooledPairs {
  genuine: Float64Array;
  impostor: Float64Array;
  sets: SetSummary[];
  perSet: Array<{ dir: string; genuine: Float64Array; impostor: Float64Array }>;
}

/**
 * Genuine and impostor distances of each set and pooled over the sets, as `palm eval` scores them:
 * the plain distance of one template per image (whole frames under the set's profile, or cropped
 * ROIs with `roi`), or with `variants` the minimum over the probe's rotation and zoom variants
 * (`ROI_ROTATION_ANGLES`, both directions, `palm eval --roi`).
 */
export async function pooledPairs(sets: CalibrationSet[], o: CalibrateOptions): Promise<PooledPairs> {
  const genuine: number[] = [];
  const impostor: number[] = [];
  const summaries: SetSummary[] = [];
  const perSet: PooledPairs['perSet'] = [];
  for (const set of sets) {
    let g: Float64Array;
    let i: Float64Array;
    let enrolled: number;
    if (o.roi && o.variants) {
      const rotations = [...(o.rotations ?? ROI_ROTATION_ANGLES)];
      const extract = palmExtract({ roi: true, rotations });
      const { report, extra } = await evaluate(
        set.dataset,
        o.cache
          ? cachedExtract(extract, o.cache, JSON.stringify({ roi: true, rotations, sensor: null }))
          : extract,
        { onProgress: (stage, done, total) => o.onProgress?.(`${stage} ${set.dir}`, done, total) },
      );
      g = extra.genuine;
      i = extra.impostor;
      enrolled = report.enrolled;
    } else {
      const pairs = await pairDistances(set, o);
      g = pairs.genuine;
      i = pairs.impostor;
      enrolled = pairs.enrolled;
    }
    summaries.push(setSummary(set, enrolled, o.roi));
    // a loop, not push(...x): spreading millions of arguments overflows the stack
    for (const d of g) genuine.push(d);
    for (const d of i) impostor.push(d);
    perSet.push({ dir: set.dir, genuine: g, impostor: i });
  }
  return {
    genuine: Float64Array.from(genuine),
    impostor: Float64Array.from(impostor).sort(),
    sets: summaries,
    perSet,
  };
}

/**
 * `palm calibrate threshold`: the matcher's decision threshold, the score at which the pooled
 * impostor pairs of the sets reach `TARGET_FMR`. `MATCH_THRESHOLD` (shared/palm/src/threshold.ts)
 * on the plain distance: whole frames go through the kiosk pipeline under each set's profile; with
 * `roi` the folders hold cropped palm ROIs (the committed value was calibrated that way, on three
 * synthetic ROI sets). With `roi` and `variants`, `ROI_MATCH_THRESHOLD`
 * (shared/palm/src/capture/roi-rotation.ts) on the variant search of `palm eval --roi`. This is the
 * procedure of palm-lab/scripts/calibrate-threshold.ts, which now runs through `pooledPairs`.
 */
export async function calibrateThreshold(
  sets: CalibrationSet[],
  o: CalibrateOptions,
  extraScores: number[] = [],
): Promise<CalibrationReport> {
  const pooled = await pooledPairs(sets, o);
  const variants = o.roi === true && o.variants === true;
  const committedValue = variants ? ROI_MATCH_THRESHOLD : MATCH_THRESHOLD;
  const imp = pooled.impostor;
  const gen = pooled.genuine;
  const target = pointAt(imp, gen, TARGET_FMR);
  const committed = ratesAt(imp, gen, committedValue);
  const recomputed = target?.score ?? null;
  return {
    stage: 'threshold',
    procedure:
      `score at which the pooled impostor pairs reach FMR ${TARGET_FMR} (the impostor distance at rank ⌊FMR · n⌋, ` +
      'pairs as palm eval samples them, ' +
      (variants
        ? `cropped ROIs, the minimum over the probe's variants (rotations ${ROI_ROTATION_ANGLES.join(', ')}° and zoom, both directions)`
        : o.roi
          ? 'plain distance, one template per cropped ROI'
          : 'plain distance, one template per whole frame through the kiosk pipeline under each set’s profile') +
      ')',
    sets: pooled.sets,
    constants: [
      {
        constant: variants ? 'ROI_MATCH_THRESHOLD' : 'MATCH_THRESHOLD',
        source: variants ? 'shared/palm/src/capture/roi-rotation.ts' : 'shared/palm/src/threshold.ts',
        figure: { name: `FMR at the committed threshold ${committedValue}`, value: committed.fmr },
        recomputed,
        committed: committedValue,
        tolerance: `±${SCORE_TOL} score`,
        agrees: recomputed !== null && Math.abs(recomputed - committedValue) <= SCORE_TOL + 1e-12,
        note:
          target === null
            ? `the sets' ${imp.length} impostor pairs cannot resolve FMR ${TARGET_FMR}`
            : `FNMR ${target.fnmr} at the recomputed threshold, ${committed.fnmr} at the committed one` +
              (o.roi
                ? ''
                : '; the committed value was calibrated on three synthetic ROI sets (--roi), not on camera frames'),
      },
    ],
    details: {
      genuine_pairs: gen.length,
      impostor_pairs: imp.length,
      target_fmr: TARGET_FMR,
      levels: LEVELS.map((f) => pointAt(imp, gen, f) ?? { fmr: f, unresolved: true }),
      at: [committedValue, ...extraScores].map((s) => ratesAt(imp, gen, s)),
      per_set: pooled.perSet.map((p) => ({
        dir: p.dir,
        genuine_pairs: p.genuine.length,
        impostor_pairs: p.impostor.length,
        at_committed: ratesAt(p.impostor, p.genuine, committedValue),
      })),
    },
  };
}
