import { encodeTemplate } from '../template.ts';
import { type CaptureMeasures, measureFrame, measureRoi } from './capture-checks.ts';
import { encodeResponses } from './coding.ts';
import { sharedExtractor } from './extractor.ts';
import { ORIENTATIONS } from './gabor.ts';
import { locateHand } from './hand-geometry.ts';
import { cropPalm, roiOutsideCells } from './hand-roi.ts';
import type { GrayImage } from './image-io.ts';
import { LIVENESS_THRESHOLD, livenessScore } from './liveness.ts';
import { FEATURE_GRID } from './model-graph.ts';
import { type SensorName, type SensorProfile, sensorProfile, sideMatters } from './sensor-profiles.ts';

export { LIVENESS_THRESHOLD, livenessScore } from './liveness.ts';

export type CaptureRejection =
  | 'no_hand'
  | 'underexposed'
  | 'overexposed'
  | 'too_far'
  | 'moved'
  | 'partial'
  | 'blurred'
  | 'liveness_failed';

export type CaptureHand = 'left' | 'right' | 'unknown';

export type CaptureResult =
  | {
      ok: true;
      template: Uint8Array;
      /** 0–100 */
      quality: number;
      /** 0–100; ≥ LIVENESS_THRESHOLD passes */
      liveness: number;
      /**
       * The hand's side; `unknown` when the geometry found no side cue on a profile whose side does
       * not matter (`sideMatters` false: the cameras, whose crops are not mirrored). The template
       * header carries it where the side matters (the simulator); camera templates say `unknown`.
       */
      hand: CaptureHand;
      measures: CaptureMeasures;
      /** the 128 × 128 palm ROI (grey levels), with `keepRoi` */
      roi?: Float32Array;
    }
  | {
      ok: false;
      reason: CaptureRejection;
      message: string;
      measures?: Partial<CaptureMeasures>;
      /** the ROI when the geometry found one before the capture was refused, with `keepRoi` */
      roi?: Float32Array;
    };

export interface CaptureOptions {
  /** the sensor profile (quality limits and liveness cues); default `simulator` */
  sensor?: SensorName | SensorProfile;
  /** return the ROI crop with the result */
  keepRoi?: boolean;
}

/**
 * Decision thresholds of the simulator profile, calibrated on synthetic captures (see
 * docs/palm-pipeline.md); every measure is scale- and gain-free so they do not depend on the frame
 * size. Other sensors have their own (`sensor-profiles.ts`).
 */
export const LIMITS = sensorProfile('simulator').limits;

const MESSAGES: Record<CaptureRejection, string> = {
  no_hand: 'No hand in view',
  underexposed: 'Image too dark',
  overexposed: 'Image too bright',
  too_far: 'Hand too far from the scanner',
  moved: 'Hand moved during the capture',
  partial: 'Hand not fully in view',
  blurred: 'Image out of focus',
  liveness_failed: 'Presentation attack suspected',
};

function reject(
  reason: CaptureRejection,
  measures?: Partial<CaptureMeasures>,
  roi?: Float32Array,
): CaptureResult {
  const r: CaptureResult = { ok: false, reason, message: MESSAGES[reason] };
  if (measures) r.measures = measures;
  if (roi) r.roi = roi;
  return r;
}

/** Whole frame → quality gate → ROI → liveness → template, under a sensor profile. */
export async function processCapture(frame: GrayImage, options: CaptureOptions = {}): Promise<CaptureResult> {
  const profile = sensorProfile(options.sensor);
  const limits = profile.limits;
  if (frame.width < 32 || frame.height < 32 || frame.data.length !== frame.width * frame.height) {
    return reject('no_hand');
  }
  const g = locateHand(frame, profile.roi, profile.darkHand ? { darkHand: true } : {});
  if (g.coverage < limits.minCoverage || g.radius < 6) return reject('no_hand');
  const fm = measureFrame(frame, g);
  if (fm.handMean < limits.minHandMean) return reject('underexposed', fm);
  if (fm.saturated > limits.maxSaturated) return reject('overexposed', fm);
  if (fm.relativeRadius < limits.minRelativeRadius) return reject('too_far', fm);
  const mirrorLeft = sideMatters(profile);
  const roi = cropPalm(frame, g, mirrorLeft);
  const kept = options.keepRoi ? roi : undefined;
  const { anisotropy } = measureRoi(roi);
  if (anisotropy > limits.maxAnisotropy) return reject('moved', { ...fm, anisotropy }, kept);
  // no side cue: refused where the crop depends on the side, `unknown` where it does not
  const hand: CaptureHand | null = g.hand ?? (mirrorLeft ? null : 'unknown');
  if (g.up === null || hand === null || g.touchesEdge) return reject('partial', { ...fm, anisotropy });
  const extractor = await sharedExtractor();
  const responses = await extractor.responses([roi]);
  const sharpness = scaleEnergyRatio(responses);
  const measures: CaptureMeasures = { ...fm, anisotropy, sharpness };
  if (sharpness < limits.minSharpness) {
    return reject(anisotropy > limits.motionAnisotropy ? 'moved' : 'blurred', measures, kept);
  }
  const liveness = livenessScore(measures, profile.cues, profile.centres);
  if (liveness < LIVENESS_THRESHOLD) return reject('liveness_failed', measures, kept);
  const quality = qualityScore(measures, limits);
  // an ROI square that overhangs the frame (accepted by the profile): its cells there are masked
  const outside = profile.roi.minInside !== undefined ? roiOutsideCells(frame, g, mirrorLeft) : null;
  const code = encodeResponses(responses, 0, undefined, outside ?? undefined);
  // the header's side narrows the 1:N search: only where the side is reliable (`sideMatters`)
  const template = encodeTemplate({
    version: 1,
    hand: mirrorLeft ? hand : 'unknown',
    quality,
    liveness,
    ...code,
  });
  const r: CaptureResult = { ok: true, template, quality, liveness, hand, measures };
  if (kept) r.roi = kept;
  return r;
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
export function qualityScore(m: CaptureMeasures, limits: SensorProfile['limits'] = LIMITS): number {
  const margin = (v: number, lo: number, good: number) => Math.max(0, Math.min(1, (v - lo) / (good - lo)));
  const parts = [
    margin(m.handMean, limits.minHandMean, 120),
    margin(1 - m.saturated, 1 - limits.maxSaturated, 0.99),
    margin(m.relativeRadius, limits.minRelativeRadius, limits.minRelativeRadius + 0.04),
    margin(-m.anisotropy, -limits.maxAnisotropy, -1.6),
    margin(m.sharpness, limits.minSharpness, limits.minSharpness * 1.8),
  ];
  const min = Math.min(...parts);
  const mean = parts.reduce((a, b) => a + b, 0) / parts.length;
  return Math.round(100 * (0.2 + 0.8 * (0.6 * min + 0.4 * mean)));
}
