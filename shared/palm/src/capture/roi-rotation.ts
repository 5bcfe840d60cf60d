import { PACKED_WORDS, probeMatcher } from '../match.ts';
import { ROI_SIZE } from './model-graph.ts';

/**
 * Rotation search for the `--roi` path. Already-cropped contactless ROIs keep a residual in-plane
 * rotation between sessions that the matcher's translation/tile search cannot absorb, so the
 * probe is coded at a few angles (one ONNX batch) and a pair scores the minimum distance over
 * them (see docs/palm-pipeline.md, "Robustness of `--roi` input").
 */

/** Angles (degrees) of the probe variants, 0° first. Chosen with data, see the docs. */
export const ROI_ROTATION_ANGLES: readonly number[] = [0, -8, 8];

/**
 * Zoom factors of the extra probe variants coded after the rotated ones whenever the rotation
 * search is on: real crops vary in scale (the ROI side follows a measured palm width or valley
 * spacing), and a pair scored in both directions covers 1/1.08 as well. Chosen with data on
 * real and synthetic crops, see docs/palm-pipeline.md ("Scale variant").
 */
export const ROI_SCALE_VARIANTS: readonly number[] = [1.08];

/**
 * Decision threshold on the similarity score (1 − 2 × distance) for the variant-tolerant ROI
 * distance (rotations and zoom, with the tile search's smoothness penalty).
 * `tsx palm-lab/scripts/calibrate-threshold.ts --at 0.34 <big-contact> <big-contactless>
 * <big-vein>` (8 400 genuine, 950 400 impostor pairs, both directions as in `eval --roi`)
 * puts FMR 1e-4 at score 0.335 (FNMR 1.01 %); at 0.34 FMR is 5.9e-5 and FNMR 1.16 %. The plain
 * distance has FMR 1e-4 at 0.320 (FNMR 4.4 %). The minimum over variants lowers impostor distances
 * too, hence a constant of its own rather than the server's whole-frame MATCH_THRESHOLD.
 */
export const ROI_MATCH_THRESHOLD = 0.34;

interface SamplingMap {
  /** Top-left source index per output pixel, and the bilinear fractions. */
  index: Int32Array;
  fx: Float32Array;
  fy: Float32Array;
}
const maps = new Map<string, SamplingMap>();

/**
 * Sampling map of a rotation by `deg` and a zoom by `zoom` about the centre, computed once per
 * (angle, zoom, size): the probe variants are fixed.
 */
function samplingMap(deg: number, n: number, zoom = 1): SamplingMap {
  const key = `${deg}:${zoom}:${n}`;
  let m = maps.get(key);
  if (m) return m;
  const a = (deg * Math.PI) / 180;
  const cos = Math.cos(a) / zoom;
  const sin = Math.sin(a) / zoom;
  const c = (n - 1) / 2;
  const max = n - 1;
  m = { index: new Int32Array(n * n), fx: new Float32Array(n * n), fy: new Float32Array(n * n) };
  for (let y = 0; y < n; y++) {
    const v = y - c;
    for (let x = 0; x < n; x++) {
      const u = x - c;
      const sx = Math.max(0, Math.min(max, c + cos * u + sin * v));
      const sy = Math.max(0, Math.min(max, c - sin * u + cos * v));
      const ix = Math.min(Math.floor(sx), max - 1);
      const iy = Math.min(Math.floor(sy), max - 1);
      m.index[y * n + x] = iy * n + ix;
      m.fx[y * n + x] = sx - ix;
      m.fy[y * n + x] = sy - iy;
    }
  }
  if (maps.size >= 64) maps.clear();
  maps.set(key, m);
  return m;
}

/**
 * Rotates an n × n ROI by `deg` degrees (counter-clockwise in image coordinates, y down) about
 * its centre with bilinear sampling; samples outside the ROI take the nearest edge value.
 */
export function rotateRoi(roi: Float32Array, deg: number, n = ROI_SIZE): Float32Array {
  return warpRoi(roi, deg, 1, n);
}

/**
 * Magnifies an n × n ROI by `zoom` about its centre (bilinear; 1.08 shows the central 1/1.08 of
 * the side at full size), edge samples replicated.
 */
export function scaleRoi(roi: Float32Array, zoom: number, n = ROI_SIZE): Float32Array {
  return warpRoi(roi, 0, zoom, n);
}

function warpRoi(roi: Float32Array, deg: number, zoom: number, n: number): Float32Array {
  if (deg === 0 && zoom === 1) return Float32Array.from(roi);
  const { index, fx, fy } = samplingMap(deg, n, zoom);
  const out = new Float32Array(n * n);
  for (let p = 0; p < n * n; p++) {
    const i = index[p]!;
    const top = roi[i]! + (roi[i + 1]! - roi[i]!) * fx[p]!;
    const bottom = roi[i + n]! + (roi[i + n + 1]! - roi[i + n]!) * fx[p]!;
    out[p] = top + (bottom - top) * fy[p]!;
  }
  return out;
}

/**
 * Rotation-tolerant distance: the minimum of `packedDistance(gallery, variant)` over `count`
 * packed probe variants laid out back to back from `vo` (the 0° variant included, so the result
 * never exceeds the plain distance). The gallery template is the other image's 0° code.
 */
export function rotationTolerantDistance(
  gallery: Uint32Array,
  go: number,
  variants: Uint32Array,
  vo: number,
  count: number,
): number {
  return variantMatcher(gallery, go)(variants, vo, count);
}

/**
 * `rotationTolerantDistance` with the gallery template fixed: it is laid out for the SIMD kernel
 * once (`probeMatcher`) and reused for every variant and every probe.
 */
export function variantMatcher(
  gallery: Uint32Array,
  go = 0,
): (variants: Uint32Array, vo: number, count: number) => number {
  const match = probeMatcher(gallery, go);
  return (variants, vo, count) => {
    let best = Number.POSITIVE_INFINITY;
    for (let k = 0; k < count; k++) {
      const d = match(variants, vo + k * PACKED_WORDS);
      if (d < best) best = d;
    }
    return best;
  };
}
