/** The liveness cues and score, now the liveness stage's (stages/liveness.ts); kept for callers of this path. */
export {
  ALL_CUES,
  CUE_CAP,
  type CueCentres,
  LIVENESS_THRESHOLD,
  type LivenessCue,
  type LivenessMeasures,
  livenessCues,
  livenessScore,
  SIMULATOR_CENTRES,
} from './stages/liveness.ts';
