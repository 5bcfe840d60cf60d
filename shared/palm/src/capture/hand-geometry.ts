/**
 * The hand's geometry in a whole frame, as the capture stages find it (stages/: detect →
 * valleys / outline → ROI placement). `locateHand` runs those stages for callers that want the
 * geometry alone (the lab's diagnostics, the tests); `processCapture` (pipeline.ts) runs them itself.
 */
import type { GrayImage } from './image-io.ts';
import { runDetect } from './stages/detect.ts';
import { geometryStages } from './stages/index.ts';
import { runOutline } from './stages/outline.ts';
import { placeRoi, type RoiProportions, SIMULATOR_ROI } from './stages/roi.ts';
import { runValleys } from './stages/valleys.ts';

export { otsu, otsuOfHistogram, WORK_SIDE } from './stages/detect.ts';
export { type RoiProportions, SIMULATOR_ROI } from './stages/roi.ts';
export { towardsMiddle } from './stages/valleys.ts';

/**
 * Hand localisation in a whole NIR frame: Otsu foreground, chamfer distance transform (the palm
 * is the largest inscribed circle), then a circular scan around the palm that crosses the
 * fingers, thumb and wrist; the valleys between the fingers fix rotation, the palm radius fixes
 * scale, and the thumb side tells left from right.
 */
export interface HandGeometry {
  threshold: number;
  /** share of the frame covered by the hand */
  coverage: number;
  /**
   * The image the hand was located on: the frame itself, or for frames larger than
   * WORK_SIDE (shorter side) the frame block-averaged by `scale`. `mask` and `distance` index it;
   * every coordinate and length below is in frame pixels.
   */
  work: GrayImage;
  scale: number;
  mask: Uint8Array;
  /** chamfer distance to the background, in work px ×3 */
  distance: Uint16Array;
  cx: number;
  cy: number;
  radius: number;
  /** angle (rad, image coordinates) of the direction from the palm towards the fingers */
  up: number | null;
  hand: 'left' | 'right' | null;
  fingers: number;
  touchesEdge: boolean;
  /** share of the ROI square inside the frame (1 when it lies wholly inside) */
  roiInside?: number;
  /** finger valleys (between index/middle, middle/ring, ring/little) when found, frame px */
  valleys?: Array<{ x: number; y: number }>;
  /** hand-side cues (diagnostics): thumb mass, thumb web, finger widths; +1 right, −1 left, 0 none */
  cues?: { mass: number; web: number; fingers: number };
  /** ROI square (centre, side, fingers-up angle) when the geometry fixes it */
  roi?: { cx: number; cy: number; side: number; up: number };
}

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
