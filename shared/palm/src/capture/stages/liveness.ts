/**
 * Stage 6, liveness: the presentation-attack score (0–100) from the cues the sensor supports, and
 * the pass decision at the shared contract's threshold. The cues and their slopes live in
 * `../liveness.ts`; a sensor profile picks the cues and sets their centres (`stages.liveness`).
 */
import type { CaptureMeasures } from '../capture-checks.ts';
import {
  type CueCentres,
  LIVENESS_THRESHOLD,
  type LivenessCue,
  type LivenessMeasures,
  livenessScore,
  SIMULATOR_CENTRES,
} from '../liveness.ts';

export interface LivenessParams {
  /** the cues the score reads on this sensor (those its camera supports; docs/palm-pipeline.md, "Sensor profiles") */
  cues: readonly LivenessCue[];
  /** the measure at which each cue's evidence is 0 — `npm run palm-lab -- calibrate liveness <dataset-dir>` */
  centres: CueCentres;
  /** score at or above which the hand counts as live: the shared contract's `LIVENESS_PASS_SCORE` (server and kiosk agree) */
  threshold: number;
}

/** The simulator's: all three cues, centres fitted on its captures (docs/palm-pipeline.md, "Quality and liveness"). */
export const DEFAULT_LIVENESS_PARAMS: LivenessParams = {
  cues: ['rounded', 'aperiodic', 'contrast'],
  centres: SIMULATOR_CENTRES,
  threshold: LIVENESS_THRESHOLD,
};

export type LivenessInput = LivenessMeasures | CaptureMeasures;

export interface LivenessOutput {
  /** 0–100 */
  score: number;
  live: boolean;
}

export function runLiveness(
  measures: LivenessInput,
  params: LivenessParams = DEFAULT_LIVENESS_PARAMS,
): LivenessOutput {
  const score = livenessScore(measures, params.cues, params.centres);
  return { score, live: score >= params.threshold };
}
