import { LIVENESS_PASS_SCORE } from '@palmid/contracts/capture/liveness';
import type { CaptureMeasures } from './capture-checks.ts';

/**
 * Liveness score (0–100) at or above which a capture counts as a live hand: the shared contract's pass
 * score, so that the agent's verdict and the server's `liveness ≥ LIVENESS_PASS` check are the same point
 * (the kiosk sends score / 100).
 */
export const LIVENESS_THRESHOLD = LIVENESS_PASS_SCORE;

/** The measures the liveness score reads. */
export type LivenessMeasures = Pick<CaptureMeasures, 'edgeFalloff' | 'periodicity' | 'veinContrast'>;

/** Centres of the three cues (the measure at which a cue's evidence is 0). */
export interface CueCentres {
  /** edge fall-off above it counts as flat */
  maxFalloff: number;
  /** periodicity above it counts as a halftone or pixel grid */
  maxPeriodicity: number;
  /** vein-scale contrast below it counts as a compressed tonal range */
  minContrast: number;
}

/** The simulator's centres (fitted on its captures, see below). */
export const SIMULATOR_CENTRES: CueCentres = { maxFalloff: 0.785, maxPeriodicity: 0.4, minContrast: 0.042 };

/** Most a single cue can add for "live" (nats), so that a clear failure of another cue still vetoes. */
export const CUE_CAP = 3;

/**
 * Evidence of each presentation-attack cue (ISO/IEC 30107 PAD), in nats, positive for a live hand:
 * - `rounded`: a live hand is rounded, so NIR falls off towards its outline; flat prints and
 *   screens do not (edge fall-off ≈ 0.7–0.85 live, 0.85–1.05 flat).
 * - `aperiodic`: skin has no periodic fine texture; halftone dots and screen pixel grids do.
 * - `contrast`: a live palm under NIR shows sub-surface veins and creases with a wide relative
 *   contrast; paper (white and ink floor) and screens (black-level glow, gamma) compress it.
 * The centres are the sensor's (sensor-profiles.ts): demosaicing and JPEG blocks of a real camera
 * add periodic texture of their own, and real NIR sensors have not been calibrated.
 * Slopes and the simulator's centres were fitted (logistic regression, then rounded) on synthetic captures of
 * identities pad0–pad399 and checked on a held-out set (docs/palm-pipeline.md).
 */
export function livenessCues(
  m: LivenessMeasures,
  centres: CueCentres = SIMULATOR_CENTRES,
): { rounded: number; aperiodic: number; contrast: number } {
  return {
    rounded: 50 * (centres.maxFalloff - m.edgeFalloff),
    aperiodic: 7 * (centres.maxPeriodicity - m.periodicity),
    contrast: 350 * (m.veinContrast - centres.minContrast),
  };
}

/** The liveness cues this module scores (a sensor profile picks the ones its camera supports). */
export type LivenessCue = 'rounded' | 'aperiodic' | 'contrast';

export const ALL_CUES: readonly LivenessCue[] = ['rounded', 'aperiodic', 'contrast'];

/**
 * Liveness 0–100: the logistic of the summed evidence of the cues the sensor supports (its
 * profile, `sensor-profiles.ts`), each cue capped at +CUE_CAP. Every measure is free of gain and
 * scale.
 */
export function livenessScore(
  m: LivenessMeasures,
  cues: readonly LivenessCue[] = ALL_CUES,
  centres: CueCentres = SIMULATOR_CENTRES,
): number {
  const c = livenessCues(m, centres);
  let z = 0;
  for (const cue of cues) z += Math.min(CUE_CAP, c[cue]);
  return Math.round(100 / (1 + Math.exp(-z)));
}
