import type { GrayImage } from './image-io.ts';

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
