/**
 * Stage 6, liveness: the presentation-attack score (0–100) from the cues the sensor supports, and
 * the pass decision at the shared contract's threshold. A sensor profile picks the cues and sets
 * their centres (`stages.liveness`); the slopes and the cap are the same on every sensor.
 */
import { LIVENESS_PASS_SCORE } from '@palmid/contracts/capture/liveness';
import type { CaptureMeasures } from '../capture-checks.ts';

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

/** The liveness cues this stage scores (a sensor profile picks the ones its camera supports). */
export type LivenessCue = 'rounded' | 'aperiodic' | 'contrast';

export const ALL_CUES: readonly LivenessCue[] = ['rounded', 'aperiodic', 'contrast'];

/** Evidence (nats) per unit of each cue's measure past its centre. */
export interface CueSlopes {
  rounded: number;
  aperiodic: number;
  contrast: number;
}

export interface LivenessParams {
  /** the cues the score reads on this sensor (those its camera supports; docs/lab/liveness.md, "Sensor profiles: validation, liveness centres, camera quality limits") */
  cues: readonly LivenessCue[];
  /**
   * the measure at which each cue's evidence is 0: on cameras re-derived by `npm run palm-lab --
   * calibrate liveness <dataset-dir> --sensor <profile>`; the simulator's fitted with the slopes
   * (below), the NIR ones set against the visible sets (docs/lab/liveness.md)
   */
  centres: CueCentres;
  /**
   * nats per unit of measure: logistic regression on the simulator's attacks and bona fide captures
   * (identities pad0–pad399, rounded; `palm-lab pad`) — docs/lab/liveness.md, "Quality and liveness"
   */
  slopes: CueSlopes;
  /** most a single cue can add for "live" (nats), so that a clear failure of another still vetoes — docs/lab/liveness.md, "Quality and liveness" */
  cap: number;
  /** score at or above which the hand counts as live: the shared contract's `LIVENESS_PASS_SCORE` (server and kiosk agree) */
  threshold: number;
}

/** The simulator's centres, fitted with the slopes on its captures (docs/lab/liveness.md, "Quality and liveness"). */
export const SIMULATOR_CENTRES: CueCentres = { maxFalloff: 0.785, maxPeriodicity: 0.4, minContrast: 0.042 };

/** Most a single cue can add for "live" (nats), so that a clear failure of another cue still vetoes. */
export const CUE_CAP = 3;

/** The slopes of the three cues (see `LivenessParams.slopes`). */
export const CUE_SLOPES: CueSlopes = { rounded: 50, aperiodic: 7, contrast: 350 };

/** The simulator's: all three cues at its centres. */
export const DEFAULT_LIVENESS_PARAMS: LivenessParams = {
  cues: ALL_CUES,
  centres: SIMULATOR_CENTRES,
  slopes: CUE_SLOPES,
  cap: CUE_CAP,
  threshold: LIVENESS_THRESHOLD,
};

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
 * identities pad0–pad399 and checked on a held-out set (docs/lab/liveness.md).
 */
export function livenessCues(
  m: LivenessMeasures,
  centres: CueCentres = SIMULATOR_CENTRES,
  slopes: CueSlopes = CUE_SLOPES,
): { rounded: number; aperiodic: number; contrast: number } {
  return {
    rounded: slopes.rounded * (centres.maxFalloff - m.edgeFalloff),
    aperiodic: slopes.aperiodic * (centres.maxPeriodicity - m.periodicity),
    contrast: slopes.contrast * (m.veinContrast - centres.minContrast),
  };
}

/**
 * Liveness 0–100: the logistic of the summed evidence of the cues the sensor supports (its
 * profile, `sensor-profiles.ts`), each cue capped at +`cap`. Every measure is free of gain and
 * scale.
 */
export function livenessScore(
  m: LivenessMeasures,
  cues: readonly LivenessCue[] = ALL_CUES,
  centres: CueCentres = SIMULATOR_CENTRES,
  slopes: CueSlopes = CUE_SLOPES,
  cap: number = CUE_CAP,
): number {
  const c = livenessCues(m, centres, slopes);
  let z = 0;
  for (const cue of cues) z += Math.min(cap, c[cue]);
  return Math.round(100 / (1 + Math.exp(-z)));
}

export interface LivenessOutput {
  /** 0–100 */
  score: number;
  live: boolean;
}

/** The score of a capture's measures on this sensor and whether it passes. */
export function runLiveness(
  measures: LivenessMeasures,
  params: LivenessParams = DEFAULT_LIVENESS_PARAMS,
): LivenessOutput {
  const score = livenessScore(measures, params.cues, params.centres, params.slopes, params.cap);
  return { score, live: score >= params.threshold };
}
