/**
 * Verification error rates from distance scores (lower = more alike; accept when d < threshold).
 * ISO/IEC 19795-1 terms: FAR/FMR over impostor pairs, FRR/FNMR over genuine pairs.
 */
export interface ErrorRates {
  eer: number;
  eerThreshold: number;
  frrAtFar: (far: number) => number;
  thresholdAtFar: (far: number) => number;
  /** DET curve points (FAR, FRR), FAR decreasing. */
  det: Array<{ far: number; frr: number }>;
}

function sorted(values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values as ArrayLike<number>).sort();
}

/** Number of values < t in a sorted array. */
function countBelow(a: Float64Array, t: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function errorRates(genuine: ArrayLike<number>, impostor: ArrayLike<number>): ErrorRates {
  const g = sorted(genuine);
  const im = sorted(impostor);
  if (g.length === 0 || im.length === 0) throw new Error('need genuine and impostor scores');
  const far = (t: number) => countBelow(im, t) / im.length;
  const frr = (t: number) => 1 - countBelow(g, t) / g.length;
  // candidate thresholds: just above every score
  const candidates = sorted([...g, ...im]);
  let eer = 1;
  let eerThreshold = 0;
  let lo = 0;
  let hi = candidates.length - 1;
  // FAR rises and FRR falls with the threshold: bisect for the crossing
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const t = candidates[mid]! + 1e-12;
    if (far(t) < frr(t)) lo = mid + 1;
    else hi = mid;
  }
  let gap = Number.POSITIVE_INFINITY;
  for (let k = Math.max(0, lo - 2); k <= Math.min(candidates.length - 1, lo + 2); k++) {
    const t = candidates[k]! + 1e-12;
    const a = far(t);
    const r = frr(t);
    if (Math.abs(a - r) < gap || (Math.abs(a - r) === gap && (a + r) / 2 < eer)) {
      gap = Math.abs(a - r);
      eer = (a + r) / 2;
      eerThreshold = t;
    }
  }
  const thresholdAtFar = (target: number) => {
    const k = Math.floor(target * im.length);
    return k >= im.length ? Number.POSITIVE_INFINITY : im[k]!;
  };
  const frrAtFar = (target: number) => frr(thresholdAtFar(target));
  const det: Array<{ far: number; frr: number }> = [];
  for (let e = 0; e >= -6; e -= 0.05) {
    const target = 10 ** e;
    if (target * im.length < 1) break;
    det.push({ far: target, frr: frrAtFar(target) });
  }
  return { eer, eerThreshold, frrAtFar, thresholdAtFar, det };
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
}
