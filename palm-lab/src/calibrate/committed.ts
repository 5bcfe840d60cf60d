/**
 * The committed constants `palm calibrate` re-derives, read in this one file from `@palmid/palm` (so
 * that a move of the capture stages inside that package changes one import list).
 */
export { CUE_CAP, type CueCentres } from '@palmid/palm/capture/liveness';
export { ROI_MATCH_THRESHOLD, ROI_ROTATION_ANGLES } from '@palmid/palm/capture/roi-rotation';
export {
  type QualityLimits,
  SENSOR_NAMES,
  SENSOR_PROFILES,
  type SensorName,
  sensorProfile,
} from '@palmid/palm/capture/sensor-profiles';
export { DEFAULT_TARGET_FPIR, IMPOSTOR_MODELS, type ImpostorModel } from '@palmid/palm/decision';
export { MATCH_THRESHOLD, TARGET_FMR } from '@palmid/palm/threshold';
