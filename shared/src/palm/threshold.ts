/**
 * Decision threshold on the similarity score (1 − 2 × distance, the distance including the tile
 * search's smoothness penalty), calibrated to a false-match rate of 1e-4 on the plain distance of
 * the three synthetic ROI sets (`tsx agent/scripts/calibrate-threshold.ts --rotations 0 …`:
 * FMR 8.4e-5, FNMR 5.7 % at 0.36; see docs/palm-pipeline.md, "Matching").
 */
export const MATCH_THRESHOLD = 0.36;
export const TARGET_FMR = 1e-4;
