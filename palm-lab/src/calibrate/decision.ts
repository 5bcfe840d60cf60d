import { distanceForEvidence, evidenceBar } from '@palmid/palm/decision';
import { fitImpostorModel, type ImpostorFit } from '@palmid/palm/impostor-fit';
import { InvalidArgumentError } from 'commander';
import { DEFAULT_TARGET_FPIR, IMPOSTOR_MODELS, type ImpostorModel, sensorProfile } from './committed.ts';
import {
  type CalibrateOptions,
  type CalibrationReport,
  type CalibrationSet,
  pairDistances,
  type SetSummary,
  setSummary,
  sig,
} from './common.ts';

/** Agreement: p within ±P_TOL, dof within ±DOF_TOL (relative): the fit rounds to 4 significant digits. */
export const P_TOL = 0.0005;
export const DOF_TOL = 0.01;

/** The gallery at which "heavier" is read: the bar of a 1e6 search at the default target FPIR. */
const HEAVY_GALLERY = 1e6;

/**
 * Distance of the N = 1e6 bar under a model: the smaller, the heavier the model's tail (more FMR at
 * every distance of the tail, so less evidence per distance and a bar further in).
 */
export function barDistance(model: ImpostorModel): number {
  return distanceForEvidence(evidenceBar(HEAVY_GALLERY, DEFAULT_TARGET_FPIR), model);
}

/**
 * `palm calibrate decision`: the binomial impostor model of the identification decision for the
 * sets' template coding (`IMPOSTOR_MODELS`, shared/palm/src/decision.ts; the sets' sensor profiles
 * must share one coding). The committed procedure: fit each development set's impostor tail
 * (`palm eval`'s `impostor_model.tail`: the (p, dof) whose log10 FMR matches the measured one from
 * FMR 1e-2 down to what ≥ 10 pairs resolve, @palmid/palm/impostor-fit) and keep the heavier of the
 * fits (the one whose N = 1e6 bar lies at the smaller distance: less evidence per distance, so the
 * FPIR stays at or under the target on every set). `wide` was fitted with COEP's five look-alike
 * identity pairs' cross pairs left out; `fine` with COEP's eight re-captured persons merged
 * (`--same`) and every other pair kept (docs/calibrate.md).
 */
export async function calibrateDecision(
  sets: CalibrationSet[],
  o: CalibrateOptions,
): Promise<CalibrationReport> {
  // one coding, refused before any set is coded and matched
  const codings = [...new Set(sets.map((s) => sensorProfile(s.sensor).stages.code.coding))];
  if (codings.length > 1)
    throw new InvalidArgumentError(
      `decision: the sets' sensor profiles code templates differently (${codings.join(', ')}): calibrate one coding at a time`,
    );
  const coding = codings[0] ?? 'wide';
  const fits: Array<{ set: CalibrationSet; fit: ImpostorFit; bar: number; excluded: number }> = [];
  const summaries: SetSummary[] = [];
  for (const set of sets) {
    const pairs = await pairDistances(set, o);
    summaries.push(setSummary(set, pairs.enrolled, o.roi));
    if (pairs.impostor.length < 2) {
      fits.push({ set, fit: null as never, bar: Number.NaN, excluded: pairs.excluded });
      continue;
    }
    const fit = fitImpostorModel(pairs.impostor);
    fits.push({ set, fit, bar: barDistance(fit.tail), excluded: pairs.excluded });
  }
  const fitted = fits.filter((f) => f.fit);
  const heaviest = fitted.reduce<(typeof fitted)[number] | undefined>(
    (best, f) => (best === undefined || f.bar < best.bar ? f : best),
    undefined,
  );
  const committed = IMPOSTOR_MODELS[coding];
  const rmsName = 'impostor-tail fit error (rms of log10 FMR, model against measured, decades)';
  const rms = heaviest ? heaviest.fit.tail_rms_decades.tail : null;
  const p = heaviest?.fit.tail.p ?? null;
  const dof = heaviest?.fit.tail.dof ?? null;
  const none = 'no set gave two impostor pairs: nothing to fit';
  return {
    stage: 'decision',
    procedure:
      'tail fit of each set (FMR 1e-2 down to the smallest level ≥ 10 impostor pairs resolve; palm eval ' +
      'impostor_model.tail), impostor pairs as palm eval samples them, excluded identity pairs left out; ' +
      'the committed model is the heavier fit (more FMR per distance: the smaller distance at the N = 1e6 bar)',
    sets: summaries,
    constants: [
      {
        constant: `IMPOSTOR_MODELS.${coding}.p`,
        source: 'shared/palm/src/decision.ts',
        figure: { name: rmsName, value: rms },
        recomputed: p,
        committed: committed.p,
        tolerance: `±${P_TOL}`,
        agrees: p !== null && Math.abs(p - committed.p) <= P_TOL + 1e-12,
        ...(heaviest ? { note: `heavier fit: ${heaviest.set.dir}` } : { note: none }),
      },
      {
        constant: `IMPOSTOR_MODELS.${coding}.dof`,
        source: 'shared/palm/src/decision.ts',
        figure: { name: rmsName, value: rms },
        recomputed: dof,
        committed: committed.dof,
        tolerance: `±${DOF_TOL * 100} %`,
        agrees: dof !== null && Math.abs(dof - committed.dof) <= DOF_TOL * committed.dof,
        ...(heaviest ? { note: `heavier fit: ${heaviest.set.dir}` } : { note: none }),
      },
    ],
    details: {
      committed_bar_distance: sig(barDistance(committed), 5),
      fits: fits.map((f) => ({
        dir: f.set.dir,
        excluded_impostor_pairs: f.excluded,
        ...(f.fit
          ? {
              impostor_pairs: f.fit.impostor_pairs,
              tail: f.fit.tail,
              moments: f.fit.moments,
              tail_rms_decades: f.fit.tail_rms_decades,
              bar_distance_1e6: sig(f.bar, 5),
              check: f.fit.check,
            }
          : { impostor_pairs: 0 }),
      })),
    },
  };
}
