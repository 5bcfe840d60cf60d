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
  return percentileSorted(
    [...values].sort((a, b) => a - b),
    p,
  );
}

/** `percentile` of values already in ascending order (nearest rank below; NaN when empty). */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

/** Error counts of one subject at a fixed threshold (accept when d < threshold). */
interface SubjectCounts {
  genuine: number;
  rejected: number;
  impostor: number;
  accepted: number;
}

export interface Interval {
  lo: number;
  hi: number;
}

/**
 * 95 % confidence intervals of FRR, FAR and their mean at a fixed threshold, by the subject
 * bootstrap of ISO/IEC 19795-1 (subjects drawn with replacement, all their pairs kept), which
 * honours the correlation between pairs of one subject that a binomial interval would ignore.
 * A genuine pair belongs to its subject, an impostor pair to its earlier-listed subject. The
 * threshold is held fixed, so its own uncertainty is not included. When no error was observed
 * the bootstrap collapses to [0, 0]; the upper bound is then the "rule of three" 3 / n (95 %).
 */
export function subjectBootstrap(
  pairs: {
    genuine: ArrayLike<number>;
    genuineSubject: ArrayLike<number>;
    impostor: ArrayLike<number>;
    impostorSubject: ArrayLike<number>;
  },
  threshold: number,
  random: () => number,
  draws = 1000,
): { frr: Interval; far: Interval; mean: Interval } {
  const bySubject = new Map<number, SubjectCounts>();
  const counts = (s: number) => {
    let c = bySubject.get(s);
    if (!c) {
      c = { genuine: 0, rejected: 0, impostor: 0, accepted: 0 };
      bySubject.set(s, c);
    }
    return c;
  };
  let rejected = 0;
  let accepted = 0;
  for (let i = 0; i < pairs.genuine.length; i++) {
    const c = counts(pairs.genuineSubject[i]!);
    c.genuine++;
    if (pairs.genuine[i]! >= threshold) {
      c.rejected++;
      rejected++;
    }
  }
  for (let i = 0; i < pairs.impostor.length; i++) {
    const c = counts(pairs.impostorSubject[i]!);
    c.impostor++;
    if (pairs.impostor[i]! < threshold) {
      c.accepted++;
      accepted++;
    }
  }
  const subjects = [...bySubject.values()];
  const frr: number[] = [];
  const far: number[] = [];
  const mean: number[] = [];
  for (let d = 0; d < draws; d++) {
    let g = 0;
    let r = 0;
    let im = 0;
    let a = 0;
    for (let k = 0; k < subjects.length; k++) {
      const c = subjects[Math.floor(random() * subjects.length)]!;
      g += c.genuine;
      r += c.rejected;
      im += c.impostor;
      a += c.accepted;
    }
    if (g === 0 || im === 0) continue;
    frr.push(r / g);
    far.push(a / im);
    mean.push((r / g + a / im) / 2);
  }
  const interval = (values: number[], zeroUpper: number | null): Interval => {
    const s = values.sort((x, y) => x - y);
    const at = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.floor(p * s.length)))] ?? Number.NaN;
    const out = { lo: at(0.025), hi: at(0.975) };
    if (zeroUpper !== null) out.hi = Math.max(out.hi, zeroUpper);
    return out;
  };
  const g = pairs.genuine.length;
  const im = pairs.impostor.length;
  return {
    frr: interval(frr, rejected === 0 ? Math.min(1, 3 / g) : null),
    far: interval(far, accepted === 0 ? Math.min(1, 3 / im) : null),
    mean: interval(mean, rejected + accepted === 0 ? Math.min(1, (3 / g + 3 / im) / 2) : null),
  };
}
