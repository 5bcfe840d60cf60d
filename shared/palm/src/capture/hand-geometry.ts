/**
 * The hand's geometry in a whole frame, as the capture stages find it (stages/: detect →
 * valleys / outline → ROI placement). `locateHand` runs those stages for callers that want the
 * geometry alone (the lab's diagnostics, the tests); `processCapture` (pipeline.ts) runs them itself.
 */
import type { HandGeometry } from './geometry.ts';
import type { GrayImage } from './image-io.ts';
import { runDetect } from './stages/detect.ts';
import { geometryStages } from './stages/index.ts';
import { runOutline } from './stages/outline.ts';
import { placeRoi, type RoiProportions, SIMULATOR_ROI } from './stages/roi.ts';
import { runValleys } from './stages/valleys.ts';

export type { HandGeometry } from './geometry.ts';
export { otsu, otsuOfHistogram, WORK_SIDE } from './stages/detect.ts';
export { type RoiProportions, SIMULATOR_ROI } from './stages/roi.ts';
export { towardsMiddle } from './stages/valleys.ts';

/** Detect, the finger valleys (finger rings, else the outline) and the ROI square under `proportions`. */
export function locateHand(
  frame: GrayImage,
  proportions: RoiProportions = SIMULATOR_ROI,
  options: { darkHand?: boolean } = {},
): HandGeometry {
  const stages = geometryStages(proportions, options.darkHand === true);
  const detection = runDetect(frame, stages.detect);
  if (!detection.scannable) return placeRoi(detection, null, 0, stages.roi);
  const rings = stages.valleys ? runValleys(detection, stages.valleys) : { found: null, runs: 0 };
  const found = rings.found ?? runOutline(detection, stages.outline);
  return placeRoi(detection, found, rings.runs, stages.roi);
}
