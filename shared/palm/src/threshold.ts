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
