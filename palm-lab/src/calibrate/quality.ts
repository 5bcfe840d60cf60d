import { type BoundSpec, checkBounds, measureSets, summaries } from './bounds.ts';
import { type QualityLimits, SENSOR_PROFILES, type SensorName } from './committed.ts';
import type { CalibrateOptions, CalibrationReport, CalibrationSet } from './common.ts';

const FIGURE = 'bona fide rejection rate at the committed limit';

const limit =
  (key: keyof QualityLimits) =>
  (sensor: SensorName): number =>
    SENSOR_PROFILES[sensor].limits[key];

/** The quality limits with a per-capture measure (coverage and the motion rule have none to read). */
export const QUALITY_SPECS: BoundSpec[] = [
  { name: 'minHandMean', measure: 'handMean', side: 'min', committed: limit('minHandMean'), figure: FIGURE },
  {
    name: 'maxSaturated',
    measure: 'saturated',
    side: 'max',
    committed: limit('maxSaturated'),
    figure: FIGURE,
  },
  {
    name: 'minRelativeRadius',
    measure: 'relativeRadius',
    side: 'min',
    committed: limit('minRelativeRadius'),
    figure: FIGURE,
  },
  {
    name: 'maxAnisotropy',
    measure: 'anisotropy',
    side: 'max',
    committed: limit('maxAnisotropy'),
    figure: FIGURE,
  },
  {
    name: 'minSharpness',
    measure: 'sharpness',
    side: 'min',
    committed: limit('minSharpness'),
    figure: FIGURE,
  },
];

/**
 * `palm calibrate quality`: the quality limits of the sets' profiles (`SensorProfile.limits`,
 * shared/palm/src/capture/sensor-profiles.ts). The committed procedure for the camera profiles
 * (`CAMERA_LIMITS`): each limit sits beyond the 0.5th (lower limits) or 99.5th (upper limits)
 * percentile of the bona fide development captures' measure, CASIA and COEP pooled, so that a real
 * hand is not refused as dark, far, smeared or blurred; the values were then rounded outwards.
 */
export async function calibrateQuality(
  sets: CalibrationSet[],
  o: CalibrateOptions,
): Promise<CalibrationReport> {
  const measured = await measureSets(sets, o);
  const { constants, percentiles } = checkBounds(
    measured,
    QUALITY_SPECS,
    'shared/palm/src/capture/sensor-profiles.ts',
    (sensors) => `SENSOR_PROFILES[${sensors.join('|')}].limits`,
  );
  return {
    stage: 'quality',
    procedure:
      'each limit beyond the bona fide tail: a lower limit at or below the 0.5th percentile, an upper one at ' +
      'or above the 99.5th, of every set’s measure (processCapture measures under the set’s profile); ' +
      'sets whose profiles share the committed value are pooled',
    sets: summaries(measured),
    constants,
    details: {
      percentiles,
      not_covered: ['minCoverage (no per-capture measure)', 'motionAnisotropy (a rule between two measures)'],
    },
  };
}
