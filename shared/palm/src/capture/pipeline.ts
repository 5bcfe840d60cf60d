/**
 * One frame through the capture stages (stages/index.ts lists them, their inputs, outputs and
 * parameters): detect → valleys (finger rings) / outline → ROI → quality → liveness → code, under a
 * sensor profile that parameterises every stage. Read `processCapture` top to bottom.
 */
import type { CaptureMeasures } from './capture-checks.ts';
import type { GrayImage } from './image-io.ts';
import { type SensorName, type SensorProfile, sensorProfile } from './sensor-profiles.ts';
import { extractResponses, runCode } from './stages/code.ts';
import { runDetect } from './stages/detect.ts';
import { runLiveness } from './stages/liveness.ts';
import { runOutline } from './stages/outline.ts';
import { MIN_PALM_RADIUS, qualityScore, runMotion, runQuality, runSharpness } from './stages/quality.ts';
import { mirrorsLeft, placeRoi, runRoi } from './stages/roi.ts';
import { runValleys } from './stages/valleys.ts';

export { LIVENESS_THRESHOLD, livenessScore } from './stages/liveness.ts';
export { qualityScore, scaleEnergyRatio } from './stages/quality.ts';

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
 * Decision thresholds of the simulator profile (its quality stage's, stages/quality.ts); other
 * sensors have their own (`sensor-profiles.ts`).
 */
export const LIMITS = sensorProfile('simulator').stages.quality;

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

/** Whole frame → detect → valleys / outline → ROI → quality → liveness → code, under a sensor profile. */
export async function processCapture(frame: GrayImage, options: CaptureOptions = {}): Promise<CaptureResult> {
  const stages = sensorProfile(options.sensor).stages;
  if (frame.width < 32 || frame.height < 32 || frame.data.length !== frame.width * frame.height) {
    return reject('no_hand');
  }
  // 1. detect: the hand's foreground and the palm's inscribed circle
  const detection = runDetect(frame, stages.detect);
  if (
    detection.coverage < stages.quality.minCoverage ||
    detection.radius * detection.scale < MIN_PALM_RADIUS
  ) {
    return reject('no_hand');
  }
  // 2–3. the finger valleys: by the finger-ring scan, else on the hand's outline
  const rings = detection.scannable && stages.valleys ? runValleys(detection, stages.valleys) : null;
  const found = rings?.found ?? (detection.scannable ? runOutline(detection, stages.outline) : null);
  // 4a. ROI placement: the square (or the pegs pose), the side, whether the frame cuts the hand
  const geometry = placeRoi(detection, found, rings?.runs ?? 0, stages.roi);
  // 5a. quality on the frame: exposure, distance
  const frameQuality = runQuality({ frame, geometry }, stages.quality);
  if (!frameQuality.ok) return reject(frameQuality.reason, frameQuality.measures);
  // 4b. the crop
  const crop = runRoi({ frame, geometry }, stages.roi);
  const kept = options.keepRoi ? crop.roi : undefined;
  // 5b. quality on the crop: motion; then the hand wholly in view
  const motion = runMotion(crop.roi, frameQuality.measures, stages.quality);
  if (!motion.ok) return reject('moved', motion.measures, kept);
  if (crop.partial || crop.hand === null) return reject('partial', motion.measures);
  // 7a. the feature model's responses; 5c. quality on them: focus
  const responses = await extractResponses(crop.roi);
  const sharp = runSharpness(responses, motion.measures, stages.quality);
  if (!sharp.ok) return reject(sharp.reason, sharp.measures, kept);
  const measures = sharp.measures;
  // 6. liveness
  const liveness = runLiveness(measures, stages.liveness);
  if (!liveness.live) return reject('liveness_failed', measures, kept);
  // 7b. the template; its header's side narrows the 1:N search only where the side is reliable
  const quality = qualityScore(measures, stages.quality);
  const mirrorLeft = mirrorsLeft(stages.roi.proportions);
  const template = runCode(
    {
      responses,
      outside: crop.outside,
      hand: mirrorLeft ? crop.hand : 'unknown',
      quality,
      liveness: liveness.score,
    },
    stages.code,
  );
  const r: CaptureResult = {
    ok: true,
    template,
    quality,
    liveness: liveness.score,
    hand: crop.hand,
    measures,
  };
  if (kept) r.roi = kept;
  return r;
}
