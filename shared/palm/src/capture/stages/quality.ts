/**
 * Stage 5, quality: is the frame good enough to code? Three gates, cheapest first: exposure and
 * distance on the frame (`runQuality`, before the crop), motion on the ROI crop (`runMotion`),
 * focus on the feature model's responses (`runSharpness`); and the 0–100 quality score carried in
 * the template header (`qualityScore`). Every measure is free of scale and gain, so the limits do
 * not depend on the frame size.
 */
import { type CaptureMeasures, measureFrame, measureRoi } from '../capture-checks.ts';
import { ORIENTATIONS } from '../gabor.ts';
import type { HandGeometry } from '../geometry.ts';
import type { GrayImage } from '../image-io.ts';
import { FEATURE_GRID } from '../model-graph.ts';

/** The refusals this stage makes. */
export type QualityRejection = 'no_hand' | 'underexposed' | 'overexposed' | 'too_far' | 'moved' | 'blurred';

/**
 * The acceptance limits (a sensor profile sets them, `stages.quality`). Defaults: the simulator's
 * (docs/lab/liveness.md, "Quality and liveness"); the camera limits sit beyond the 0.5th / 99.5th
 * percentile of the bona fide development captures and are re-derived, with the bona fide
 * rejection rate each costs, by `npm run palm-lab -- calibrate quality <dataset-dir> --sensor <profile>`
 * (docs/calibrate.md; docs/lab/liveness.md, "Sensor profiles: validation, liveness centres, camera quality limits").
 */
export interface QualityParams {
  /** share of the frame covered by the hand (below: no hand) — docs/lab/liveness.md, "Quality and liveness" (no per-capture measure for calibrate) */
  minCoverage: number;
  /** mean grey level of the hand (below: underexposed) — `npm run palm-lab -- calibrate quality <dataset-dir>` */
  minHandMean: number;
  /** share of hand pixels at ≥ 250 (above: overexposed) — `npm run palm-lab -- calibrate quality <dataset-dir>` */
  maxSaturated: number;
  /** palm radius relative to the frame's shorter side (below: too far) — `npm run palm-lab -- calibrate quality <dataset-dir>` */
  minRelativeRadius: number;
  /** gradient-energy ratio of the ROI (above: moved) — `npm run palm-lab -- calibrate quality <dataset-dir>` */
  maxAnisotropy: number;
  /** fine over coarse Gabor energy (below: blurred or moved) — `npm run palm-lab -- calibrate quality <dataset-dir>` */
  minSharpness: number;
  /** below minSharpness, a directional smear means motion rather than defocus — docs/lab/liveness.md, "Quality and liveness" (a rule between two measures: not in calibrate) */
  motionAnisotropy: number;
}

/** The quality limits by their older name (sensor profiles, callers). */
export type QualityLimits = QualityParams;

/** Least palm radius (frame px) of a hand at all — docs/lab/liveness.md, "Quality and liveness" (the no_hand row). */
export const MIN_PALM_RADIUS = 6;

/**
 * Where the quality score's margins reach 1 (a measure this good counts fully): hand mean 120 grey
 * levels, 99 % unsaturated, 0.04 above the least relative radius, anisotropy 1.6, sharpness 1.8 ×
 * its limit; the score is 20 + 80 × (0.6 × weakest + 0.4 × mean margin). Chosen on the simulator's
 * captures (docs/lab/liveness.md, "Quality and liveness"); not swept since.
 */
const GOOD = { handMean: 120, unsaturated: 0.99, radiusMargin: 0.04, anisotropy: 1.6, sharpness: 1.8 };

/** The simulator's limits, from its forced-condition captures (docs/lab/liveness.md, "Quality and liveness"). */
export const DEFAULT_QUALITY_PARAMS: QualityParams = {
  minCoverage: 0.03,
  minHandMean: 60,
  maxSaturated: 0.25,
  minRelativeRadius: 0.13,
  maxAnisotropy: 3.2,
  minSharpness: 0.3,
  motionAnisotropy: 1.9,
};

export interface QualityInput {
  frame: GrayImage;
  geometry: HandGeometry;
}

/** The frame's measures (all but those of the crop and the responses). */
export type FrameMeasures = Omit<CaptureMeasures, 'sharpness' | 'anisotropy'>;

/** The frame's measures, or the first limit they break. */
export type QualityOutput =
  | { ok: true; measures: FrameMeasures }
  | { ok: false; reason: 'underexposed' | 'overexposed' | 'too_far'; measures: FrameMeasures };

/** Exposure and distance of a located hand, in that order (before the crop). */
export function runQuality(
  input: QualityInput,
  params: QualityParams = DEFAULT_QUALITY_PARAMS,
): QualityOutput {
  const measures = measureFrame(input.frame, input.geometry);
  if (measures.handMean < params.minHandMean) return { ok: false, reason: 'underexposed', measures };
  if (measures.saturated > params.maxSaturated) return { ok: false, reason: 'overexposed', measures };
  if (measures.relativeRadius < params.minRelativeRadius) return { ok: false, reason: 'too_far', measures };
  return { ok: true, measures };
}

/** Motion on the ROI crop (ROI_SIZE² grey levels): a smear one way raises the gradient anisotropy. */
export function runMotion(
  roi: Float32Array,
  frame: FrameMeasures,
  params: QualityParams = DEFAULT_QUALITY_PARAMS,
): { ok: boolean; measures: Omit<CaptureMeasures, 'sharpness'> } {
  const { anisotropy } = measureRoi(roi);
  return { ok: anisotropy <= params.maxAnisotropy, measures: { ...frame, anisotropy } };
}

/** Focus from the feature model's responses: refused as blurred, or as moved when the ROI is smeared one way. */
export function runSharpness(
  responses: Float32Array,
  measures: Omit<CaptureMeasures, 'sharpness'>,
  params: QualityParams = DEFAULT_QUALITY_PARAMS,
):
  | { ok: true; measures: CaptureMeasures }
  | { ok: false; reason: 'moved' | 'blurred'; measures: CaptureMeasures } {
  const sharpness = scaleEnergyRatio(responses);
  const all: CaptureMeasures = { ...measures, sharpness };
  if (sharpness < params.minSharpness) {
    return {
      ok: false,
      reason: measures.anisotropy > params.motionAnisotropy ? 'moved' : 'blurred',
      measures: all,
    };
  }
  return { ok: true, measures: all };
}

/** Fine over coarse Gabor energy: defocus removes the fine scale first. */
export function scaleEnergyRatio(responses: Float32Array): number {
  const plane = FEATURE_GRID * FEATURE_GRID;
  let fine = 0;
  let coarse = 0;
  for (let i = 0; i < ORIENTATIONS * plane; i++) {
    fine += responses[i]! * responses[i]!;
    coarse += responses[i + ORIENTATIONS * plane]! * responses[i + ORIENTATIONS * plane]!;
  }
  return fine / (coarse + 1e-9);
}

/** 0–100: how far each measure sits inside its acceptance limit (the weakest one counts most). */
export function qualityScore(m: CaptureMeasures, limits: QualityParams = DEFAULT_QUALITY_PARAMS): number {
  const margin = (v: number, lo: number, good: number) => Math.max(0, Math.min(1, (v - lo) / (good - lo)));
  const parts = [
    margin(m.handMean, limits.minHandMean, GOOD.handMean),
    margin(1 - m.saturated, 1 - limits.maxSaturated, GOOD.unsaturated),
    margin(m.relativeRadius, limits.minRelativeRadius, limits.minRelativeRadius + GOOD.radiusMargin),
    margin(-m.anisotropy, -limits.maxAnisotropy, -GOOD.anisotropy),
    margin(m.sharpness, limits.minSharpness, limits.minSharpness * GOOD.sharpness),
  ];
  const min = Math.min(...parts);
  const mean = parts.reduce((a, b) => a + b, 0) / parts.length;
  return Math.round(100 * (0.2 + 0.8 * (0.6 * min + 0.4 * mean)));
}
