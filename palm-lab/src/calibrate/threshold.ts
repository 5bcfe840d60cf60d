import { MATCH_THRESHOLD, TARGET_FMR } from './committed.ts';
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

/**
 * `palm calibrate threshold`: the matcher's decision threshold `MATCH_THRESHOLD`
 * (shared/palm/src/threshold.ts), the score at which the pooled impostor pairs of the sets reach
 * `TARGET_FMR` (plain distance, one template per image, the pairs `palm eval` scores). Whole frames
 * go through the kiosk pipeline under each set's profile; with `roi` the folders hold cropped palm
 * ROIs (the committed value was calibrated that way, on three synthetic ROI sets). This is the
 * procedure of the former `palm-lab/scripts/calibrate-threshold.ts --rotations 0` / `--sensor`.
 */
export async function calibrateThreshold(
  sets: CalibrationSet[],
  o: CalibrateOptions,
  extraScores: number[] = [],
): Promise<CalibrationReport> {
  const genuine: number[] = [];
  const impostor: number[] = [];
  const summaries: SetSummary[] = [];
  const perSet: Array<Record<string, unknown>> = [];
  for (const set of sets) {
    const pairs = await pairDistances(set, o);
    summaries.push(setSummary(set, pairs.enrolled, o.roi));
    // a loop, not push(...x): spreading millions of arguments overflows the stack
    for (const d of pairs.genuine) genuine.push(d);
    for (const d of pairs.impostor) impostor.push(d);
    perSet.push({
      dir: set.dir,
      genuine_pairs: pairs.genuine.length,
      impostor_pairs: pairs.impostor.length,
      at_committed: ratesAt(pairs.impostor, pairs.genuine, MATCH_THRESHOLD),
    });
  }
  const imp = Float64Array.from(impostor).sort();
  const gen = Float64Array.from(genuine);
  const target = pointAt(imp, gen, TARGET_FMR);
  const committed = ratesAt(imp, gen, MATCH_THRESHOLD);
  const recomputed = target?.score ?? null;
  return {
    stage: 'threshold',
    procedure:
      `score at which the pooled impostor pairs reach FMR ${TARGET_FMR} (the impostor distance at rank ⌊FMR · n⌋, ` +
      'plain distance, one template per image, pairs as palm eval samples them)' +
      (o.roi ? '; cropped ROIs' : '; whole frames through the kiosk pipeline under each set’s profile'),
    sets: summaries,
    constants: [
      {
        constant: 'MATCH_THRESHOLD',
        source: 'shared/palm/src/threshold.ts',
        figure: { name: `FMR at the committed threshold ${MATCH_THRESHOLD}`, value: committed.fmr },
        recomputed,
        committed: MATCH_THRESHOLD,
        tolerance: `±${SCORE_TOL} score`,
        agrees: recomputed !== null && Math.abs(recomputed - MATCH_THRESHOLD) <= SCORE_TOL + 1e-12,
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
      at: [MATCH_THRESHOLD, ...extraScores].map((s) => ratesAt(imp, gen, s)),
      per_set: perSet,
    },
  };
}
