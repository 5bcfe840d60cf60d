/**
 * The capture front end as a chain of stages, each a module with typed input and output and its
 * own parameters (`<Stage>Params`, defaults `DEFAULT_<STAGE>_PARAMS`, each tuned constant naming
 * its evidence). `processCapture` (pipeline.ts) runs them in this order; a sensor profile
 * (sensor-profiles.ts) is the `CaptureStages` object that parameterises them.
 *
 * | stage      | module        | input                                   | output                                            | params            |
 * |------------|---------------|-----------------------------------------|---------------------------------------------------|-------------------|
 * | detect     | detect.ts     | frame (grey)                            | `Detection`: work image, Otsu mask, chamfer distance, palm circle, scan centres | `DetectParams`   |
 * | valleys    | valleys.ts    | `Detection`                             | `FingerValleys` by the finger-ring scan, or none  | `ValleysParams` (null: skipped) |
 * | outline    | outline.ts    | `Detection` (when the rings found none) | `FingerValleys` from the outline's convexity defects, or none | `OutlineParams` |
 * | ROI        | roi.ts        | `Detection`, `FingerValleys`            | `placeRoi`: `HandGeometry` (square, side, cut by the frame); `runRoi`: crop, side, partial, masked cells | `RoiParams` (the sensor's `RoiProportions`) |
 * | quality    | quality.ts    | frame, `HandGeometry`; crop; responses | `runQuality`: dark, bright, far; `runMotion`: moved; `runSharpness`: blurred or moved; `qualityScore` | `QualityParams` |
 * | liveness   | liveness.ts   | measures                                | score 0–100, live                                 | `LivenessParams`  |
 * | code       | code.ts       | crop → responses (ONNX); responses, masked cells, header | template (v1)                       | `CodeParams`      |
 *
 * The chain, cheapest first: detect (no_hand) → valleys / outline → ROI placement → quality on the
 * frame (underexposed, overexposed, too_far) → ROI crop → quality on the crop (moved) → partial
 * (ROI) → the responses (code) → quality on them (blurred or moved) → liveness (liveness_failed) →
 * code.
 */
import type { TemplateCoding } from '../../template.ts';
import { PEG_VALLEYS } from '../hand-contour.ts';
import { type CodeParams, DEFAULT_CODE_PARAMS } from './code.ts';
import { DEFAULT_DETECT_PARAMS, type DetectParams } from './detect.ts';
import { DEFAULT_LIVENESS_PARAMS, type LivenessParams } from './liveness.ts';
import { DEFAULT_OUTLINE_PARAMS, type OutlineParams } from './outline.ts';
import { DEFAULT_QUALITY_PARAMS, type QualityParams } from './quality.ts';
import { DEFAULT_ROI_PARAMS, type RoiParams, type RoiProportions } from './roi.ts';
import { DEFAULT_VALLEYS_PARAMS, type ValleysParams } from './valleys.ts';

export * from './code.ts';
export * from './detect.ts';
export * from './liveness.ts';
export * from './outline.ts';
export * from './quality.ts';
export * from './roi.ts';
export * from './valleys.ts';

/** The parameters of every stage: what a sensor profile is to the pipeline. */
export interface CaptureStages {
  detect: DetectParams;
  /** null: the finger-ring scan is skipped (the outline alone finds the valleys) */
  valleys: ValleysParams | null;
  outline: OutlineParams;
  roi: RoiParams;
  quality: QualityParams;
  liveness: LivenessParams;
  code: CodeParams;
}

/** The geometric stages' parameters (detect, valleys, outline, ROI) for a sensor's ROI proportions. */
export function geometryStages(
  proportions: RoiProportions,
  darkHand = false,
): Pick<CaptureStages, 'detect' | 'valleys' | 'outline' | 'roi'> {
  return {
    detect: { ...DEFAULT_DETECT_PARAMS, darkHand },
    // real cameras, whose hands the finger rings rarely fit, skip the ring scan
    valleys: proportions.outlineOnly ? null : DEFAULT_VALLEYS_PARAMS,
    // pegs: the valleys only tell the side and the direction, kept as found, on the looser rule
    outline: proportions.circle
      ? { ...DEFAULT_OUTLINE_PARAMS, rule: PEG_VALLEYS, refine: false }
      : { ...DEFAULT_OUTLINE_PARAMS, centreUp: proportions.centreUp ?? 0 },
    roi: { ...DEFAULT_ROI_PARAMS, proportions },
  };
}

/** Every stage's parameters for a sensor: its ROI proportions, hand polarity, quality limits, liveness cues and template coding. */
export function captureStages(
  proportions: RoiProportions,
  options: {
    darkHand?: boolean;
    quality?: QualityParams;
    liveness?: Partial<LivenessParams>;
    coding?: TemplateCoding;
  } = {},
): CaptureStages {
  return {
    ...geometryStages(proportions, options.darkHand === true),
    quality: options.quality ?? DEFAULT_QUALITY_PARAMS,
    liveness: { ...DEFAULT_LIVENESS_PARAMS, ...options.liveness },
    code: { ...DEFAULT_CODE_PARAMS, coding: options.coding ?? DEFAULT_CODE_PARAMS.coding },
  };
}
