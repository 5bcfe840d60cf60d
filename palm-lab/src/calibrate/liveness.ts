import { type BoundSpec, checkBounds, measureSets, summaries } from './bounds.ts';
import { type CueCentres, SENSOR_PROFILES, type SensorName } from './committed.ts';
import type { CalibrateOptions, CalibrationReport, CalibrationSet } from './common.ts';

const FIGURE = 'bona fide rejection rate at the cue centre (the cue alone: evidence < 0)';

/** The simulator's centres are a fit against its attacks, not a bound on bona fide captures. */
const origin = (sensors: SensorName[]) =>
  sensors.includes('simulator')
    ? 'the simulator’s centres were fitted by logistic regression on its synthetic attacks (palm pad), which this stage does not repeat'
    : undefined;

/**
 * A centre counts only on the profiles whose liveness score reads its cue: the set's own profile, or
 * `target` for every set (`--centres-of`: a profile without development data of its own, its
 * centres checked against the bona fide captures of other cameras, as the NIR centres were set).
 */
const centre =
  (key: keyof CueCentres, cue: 'rounded' | 'aperiodic' | 'contrast', target?: SensorName) =>
  (sensor: SensorName): number | undefined => {
    const p = SENSOR_PROFILES[target ?? sensor];
    return p.cues.includes(cue) ? p.centres[key] : undefined;
  };

export function livenessSpecs(target?: SensorName): BoundSpec[] {
  const from = (sensors: SensorName[]) => origin(target ? [target] : sensors);
  return [
    {
      name: 'maxPeriodicity',
      measure: 'periodicity',
      side: 'max',
      committed: centre('maxPeriodicity', 'aperiodic', target),
      figure: FIGURE,
      origin: from,
    },
    {
      name: 'maxFalloff',
      measure: 'edgeFalloff',
      side: 'max',
      committed: centre('maxFalloff', 'rounded', target),
      figure: FIGURE,
      origin: from,
    },
    {
      name: 'minContrast',
      measure: 'veinContrast',
      side: 'min',
      committed: centre('minContrast', 'contrast', target),
      figure: FIGURE,
      origin: from,
    },
  ];
}

export const LIVENESS_SPECS: BoundSpec[] = livenessSpecs();

/**
 * `palm calibrate liveness`: the cue centres of the sets' profiles (`SensorProfile.centres`). The
 * committed procedure for real cameras (`CAMERA_PERIODICITY` 0.6): the centre sits beyond the bona
 * fide development captures' 99.5th percentile of the measure (CASIA 0.30, COEP 0.45 when it was
 * set), so the cue does not refuse real hands; the NIR centres were set the same way against the
 * visible sets (no NIR capture). The simulator's centres came from a logistic regression on its
 * synthetic attacks (`palm pad`), which this stage does not repeat: on bona fide simulator frames
 * it checks only that the centres lie beyond their tail.
 */
export async function calibrateLiveness(
  sets: CalibrationSet[],
  o: CalibrateOptions,
): Promise<CalibrationReport> {
  const target = o.centresOf;
  const measured = await measureSets(sets, o);
  const { constants, percentiles } = checkBounds(
    measured,
    livenessSpecs(target),
    'shared/palm/src/capture/sensor-profiles.ts',
    (sensors) => `SENSOR_PROFILES[${target ?? sensors.join('|')}].centres`,
  );
  return {
    stage: 'liveness',
    procedure:
      'each cue centre the profile reads beyond the bona fide tail of its measure: periodicity and edge ' +
      'fall-off at or above the 99.5th percentile, vein-scale contrast at or below the 0.5th, of every set ' +
      '(bona fide images only; processCapture measures under the set’s profile)' +
      (target ? `; the centres of ${target}, checked against these sets` : ''),
    sets: summaries(measured),
    constants,
    details: { percentiles },
  };
}
