import type { TemplateCoding } from './template.ts';

/**
 * Decision threshold on the similarity score (1 − 2 × distance, the distance including the tile
 * search's smoothness penalty and its rescaling by the trusted share of the overlap), calibrated
 * to a false-match rate of 1e-4 on the plain distance of the three synthetic ROI sets
 * (`tsx palm-lab/scripts/calibrate-threshold.ts --rotations 0 --at 0.325 …`: FMR 5.7e-5, FNMR 4.7 %
 * at 0.325, with every cell of a code trusted; see docs/palm-pipeline.md, "Matching"). Re-derived by
 * `npm run palm -- calibrate threshold --roi <big-contact> <big-contactless> <big-vein>` (docs/calibrate.md).
 */
export const MATCH_THRESHOLD = 0.325;
export const TARGET_FMR = 1e-4;

/**
 * The per-comparison threshold of each template coding (template.ts `TemplateCoding`): `wide`
 * MATCH_THRESHOLD above; `fine` 0.25 (distance 0.375), near where the `fine` impostor model puts FMR
 * TARGET_FMR (0.3735, score 0.253): measured FMR 7.2e-5 / FNMR 1.44 % on CASIA 0051+ and 7.6e-5 /
 * 0.72 % on COEP 055+ (eight merged) coded `fine` (docs/palm-pipeline.md, "Template codings"). The
 * server's PALMID_MATCH_THRESHOLD defaults to its coding's and may only be raised above it.
 */
export const MATCH_THRESHOLDS: Readonly<Record<TemplateCoding, number>> = {
  wide: MATCH_THRESHOLD,
  fine: 0.25,
};

export function matchThresholdFor(coding: TemplateCoding = 'wide'): number {
  return MATCH_THRESHOLDS[coding];
}
