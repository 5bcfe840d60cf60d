import type { CaptureMeasures } from './capture-checks.ts';
import type { LivenessCue } from './sensor-profiles.ts';

/**
 * Liveness score (0–100) at or above which a capture counts as a live hand. It is 50 so that the
 * agent's verdict and the server's `liveness ≥ 0.5` check agree (the kiosk sends score / 100).
 */
export const LIVENESS_THRESHOLD = 50;

/** The measures the liveness score reads. */
export type LivenessMeasures = Pick<CaptureMeasures, 'edgeFalloff' | 'periodicity' | 'veinContrast'>;

/** Most a single cue can add for "live" (nats), so that a clear failure of another cue still vetoes. */
export const CUE_CAP = 3;

/**
 * Evidence of each presentation-attack cue (ISO/IEC 30107 PAD), in nats, positive for a live hand:
 * - `rounded`: a live hand is rounded, so NIR falls off towards its outline; flat prints and
 *   screens do not (edge fall-off ≈ 0.7–0.85 live, 0.85–1.05 flat).
 * - `aperiodic`: skin has no periodic fine texture; halftone dots and screen pixel grids do.
 * - `contrast`: a live palm under NIR shows sub-surface veins and creases with a wide relative
 *   contrast; paper (white and ink floor) and screens (black-level glow, gamma) compress it.
 * `maxPeriodicity` is the sensor's centre of the periodicity cue (demosaicing and JPEG blocks of
 * a real camera add fine periodic texture of their own; sensor-profiles.ts).
 * Slopes and centres were fitted (logistic regression, then rounded) on synthetic captures of
 * identities pad0–pad399 and checked on a held-out set (docs/palm-pipeline.md).
 */
export function livenessCues(
  m: LivenessMeasures,
  maxPeriodicity = 0.4,
): { rounded: number; aperiodic: number; contrast: number } {
  return {
    rounded: 50 * (0.785 - m.edgeFalloff),
    aperiodic: 7 * (maxPeriodicity - m.periodicity),
    contrast: 350 * (m.veinContrast - 0.042),
  };
}

export const ALL_CUES: readonly LivenessCue[] = ['rounded', 'aperiodic', 'contrast'];

/**
 * Liveness 0–100: the logistic of the summed evidence of the cues the sensor supports (its
 * profile, `sensor-profiles.ts`), each cue capped at +CUE_CAP. Every measure is free of gain and
 * scale.
 */
export function livenessScore(
  m: LivenessMeasures,
  cues: readonly LivenessCue[] = ALL_CUES,
  maxPeriodicity = 0.4,
): number {
  const c = livenessCues(m, maxPeriodicity);
  let z = 0;
  for (const cue of cues) z += Math.min(CUE_CAP, c[cue]);
  return Math.round(100 / (1 + Math.exp(-z)));
}
