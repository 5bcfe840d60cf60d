/**
 * Stage 3, outline: the finger valleys as convexity defects of the hand's outline (hand-contour.ts:
 * largest component, Moore tracing, convex hull, the run of three defects most like a hand's
 * valleys) — for hands cut by the frame, fingers close together, or a palm centre the finger
 * rings miss. Tried at the Otsu level, then at tighter levels where touching fingers come apart.
 * Runs when the finger-ring scan (valleys.ts) found nothing, or in its place on profiles whose
 * hands the rings rarely fit (`outlineOnly`). The defects lie on the work grid: each valley is
 * refined sub-pixel across its gap and "up" is the normal of the line fitted through all three.
 */
import { largestComponent, outlineValleys, STRICT_VALLEYS, type ValleyRule } from '../hand-contour.ts';
import type { Detection } from './detect.ts';
import { type FingerValleys, fittedNormal, refineValley, towardsMiddle, valleyNormal } from './valleys.ts';

export interface OutlineParams {
  /** grey levels tried, as shares of the way from the Otsu level up to the palm's median — docs/lab/roi-geometry.md, "Capture path on real hands" */
  levels: readonly number[];
  /**
   * how strictly three defects must look like finger valleys (hand-contour.ts names each limit's
   * evidence): STRICT_VALLEYS, or PEG_VALLEYS for hands held by pegs — docs/lab/real-data.md, "Real-data numbers (development sets, whole frames)"
   */
  rule: ValleyRule;
  /** refine the valleys sub-pixel and fit "up" through all three (off for pegs: the valleys only tell side and direction) */
  refine: boolean;
  /**
   * "up" turned this share of the way towards the direction from the palm centre to the valleys
   * (0: not turned; OUTLINE_ROI 0.3) — docs/lab/roi-geometry.md, "Outline valleys, third pass: the square's pose" (CASIA EER 0.98 → 0.96 %)
   */
  centreUp: number;
}

export const DEFAULT_OUTLINE_PARAMS: OutlineParams = {
  levels: [0, 0.2, 0.4, 0.6],
  rule: STRICT_VALLEYS,
  refine: true,
  centreUp: 0,
};

/** The finger valleys on the hand's outline (`runs` 4), or null. */
export function runOutline(
  detection: Detection,
  params: OutlineParams = DEFAULT_OUTLINE_PARAMS,
): FingerValleys | null {
  const { located, threshold, palmGrey, cx, cy, radius } = detection;
  const { width: w, height: h, data } = located;
  const level = (share: number) => threshold + share * (palmGrey - threshold);
  let o: ReturnType<typeof outlineValleys> = null;
  let comp: Uint8Array = detection.mask;
  let at = threshold;
  for (const share of params.levels) {
    at = level(share);
    // thresholded in the labelling pass itself (no mask per level)
    comp = largestComponent(data, w, h, at).comp;
    o = outlineValleys(comp, w, h, cx, cy, radius, params.rule);
    if (o) break;
  }
  if (!o) return null;
  let refined = o.valleys;
  let up = o.up;
  if (params.refine) {
    for (let pass = 0; pass < 2; pass++) {
      refined = o.valleys.map((v) => refineValley(located, at, v, up, radius));
      up = valleyNormal(refined[0]!, refined[2]!, up);
    }
    up = fittedNormal(refined, up);
    if (params.centreUp) up = towardsMiddle(up, refined, cx, cy, params.centreUp);
  }
  return { valleys: refined, up, runs: 4, centre: { x: cx, y: cy }, web: o.web, fingerMask: comp };
}
