/**
 * Decision threshold on the similarity score (1 − 2 × normalised Hamming distance), calibrated
 * on `npm run palm -- eval` over synthetic cross-capture data to a false-match rate of 1e-4
 * (see docs/palm-pipeline.md for the measured FMR/FNMR at this point).
 */
export const MATCH_THRESHOLD = 0.48;
export const TARGET_FMR = 1e-4;
