import { encodeTemplate } from '@palmid/shared/palm/template.ts';
import { type CaptureMeasures, measureFrame, measureRoi } from './capture-checks.ts';
import { encodeResponses } from './coding.ts';
import { sharedExtractor } from './extractor.ts';
import { ORIENTATIONS } from './gabor.ts';
import { locateHand } from './hand-geometry.ts';
import { cropPalm } from './hand-roi.ts';
import type { GrayImage } from './image-io.ts';
import { LIVENESS_THRESHOLD, livenessScore } from './liveness.ts';
import { FEATURE_GRID } from './model-graph.ts';

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

export type CaptureResult =
  | {
      ok: true;
      template: Uint8Array;
      /** 0–100 */
      quality: number;
      /** 0–100; ≥ LIVENESS_THRESHOLD passes */
      liveness: number;
      hand: 'left' | 'right';
      measures: CaptureMeasures;
    }
  | { ok: false; reason: CaptureRejection; message: string; measures?: Partial<CaptureMeasures> };

/**
 * Decision thresholds, calibrated on synthetic captures (see docs/palm-pipeline.md); every
 * measure is scale- and gain-free so they do not depend on the frame size.
 */
export const LIMITS = {
  minCoverage: 0.03,
  minHandMean: 60,
  maxSaturated: 0.25,
  minRelativeRadius: 0.13,
  maxAnisotropy: 3.2,
  minSharpness: 0.3,
  /** below minSharpness, a directional smear means motion rather than defocus */
  motionAnisotropy: 1.9,
} as const;

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

function reject(reason: CaptureRejection, measures?: Partial<CaptureMeasures>): CaptureResult {
  return measures
    ? { ok: false, reason, message: MESSAGES[reason], measures }
    : { ok: false, reason, message: MESSAGES[reason] };
}

/** Whole NIR frame → quality gate → ROI → liveness → template. */
export async function processCapture(frame: GrayImage): Promise<CaptureResult> {
  if (frame.width < 32 || frame.height < 32 || frame.data.length !== frame.width * frame.height) {
    return reject('no_hand');
  }
  const g = locateHand(frame);
  if (g.coverage < LIMITS.minCoverage || g.radius < 6) return reject('no_hand');
  const fm = measureFrame(frame, g);
  if (fm.handMean < LIMITS.minHandMean) return reject('underexposed', fm);
  if (fm.saturated > LIMITS.maxSaturated) return reject('overexposed', fm);
  if (fm.relativeRadius < LIMITS.minRelativeRadius) return reject('too_far', fm);
  const roi = cropPalm(frame, g);
  const { anisotropy } = measureRoi(roi);
  if (anisotropy > LIMITS.maxAnisotropy) return reject('moved', { ...fm, anisotropy });
  if (g.up === null || g.hand === null || g.touchesEdge) return reject('partial', { ...fm, anisotropy });
  const extractor = await sharedExtractor();
  const responses = await extractor.responses([roi]);
  const sharpness = scaleEnergyRatio(responses);
  const measures: CaptureMeasures = { ...fm, anisotropy, sharpness };
  if (sharpness < LIMITS.minSharpness) {
    return reject(anisotropy > LIMITS.motionAnisotropy ? 'moved' : 'blurred', measures);
  }
  const liveness = livenessScore(measures);
  if (liveness < LIVENESS_THRESHOLD) return reject('liveness_failed', measures);
  const quality = qualityScore(measures);
  const code = encodeResponses(responses);
  const template = encodeTemplate({ version: 1, hand: g.hand, quality, liveness, ...code });
  return { ok: true, template, quality, liveness, hand: g.hand, measures };
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
export function qualityScore(m: CaptureMeasures): number {
  const margin = (v: number, lo: number, good: number) => Math.max(0, Math.min(1, (v - lo) / (good - lo)));
  const parts = [
    margin(m.handMean, LIMITS.minHandMean, 120),
    margin(1 - m.saturated, 1 - LIMITS.maxSaturated, 0.99),
    margin(m.relativeRadius, LIMITS.minRelativeRadius, 0.17),
    margin(-m.anisotropy, -LIMITS.maxAnisotropy, -1.6),
    margin(m.sharpness, LIMITS.minSharpness, LIMITS.minSharpness * 1.8),
  ];
  const min = Math.min(...parts);
  const mean = parts.reduce((a, b) => a + b, 0) / parts.length;
  return Math.round(100 * (0.2 + 0.8 * (0.6 * min + 0.4 * mean)));
}
