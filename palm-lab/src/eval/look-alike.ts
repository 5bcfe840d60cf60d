/**
 * Pairs of identities whose cross pairs look genuine: a dataset-curation report
 * (docs/palm-pipeline.md, "Look-alike identities"). A person enrolled twice under two labels (a
 * second session filed as a new subject, a copied folder) puts genuine pairs among the impostor
 * ones, and at FAR 1e-4 the few closest impostor pairs decide the FRR, so such a pair of labels
 * can set a whole set's result. Every pair of identities (a, b) is described by all its cross
 * distances (each image of a against each of b): their median, where that median falls among the
 * other identity pairs' impostor distances and among the genuine ones, and how far it stands from
 * the medians of all identity pairs. Only labels and aggregate statistics: no per-image result.
 */

import { percentileSorted } from './metrics.ts';

/** One pair of identities, by the distribution of its cross distances. */
export interface IdentityPair {
  a: string;
  b: string;
  /** cross pairs (images of a × images of b) */
  pairs: number;
  min: number;
  median: number;
  max: number;
  /** impostor pairs of the other identity pairs with a distance ≤ this pair's median */
  impostors_closer: number;
  /** impostors_closer over the other identity pairs' impostor pairs: the median's rank among them */
  impostor_quantile: number;
  /** share of the genuine pairs with a distance ≤ this pair's median (its rank among them); null without genuine pairs */
  genuine_quantile: number | null;
  /** cross pairs closer than the genuine pairs' median */
  below_genuine_median: number;
  /**
   * (median − the median of all identity pairs' medians) / their scaled MAD (1.4826 × median
   * absolute deviation): how many robust standard deviations this pair stands below the others
   */
  robust_z: number;
  /** robust_z ≤ −`flagZ`: the pair stands far below every ordinary pair of identities */
  looks_genuine: boolean;
}

export interface LookAlikeReport {
  identities: number;
  images: number;
  genuine_pairs: number;
  impostor_pairs: number;
  /** identity pairs with at least one cross pair */
  identity_pairs: number;
  /** null when no identity has two images */
  genuine: { median: number; p95: number; max: number } | null;
  impostor: { min: number; q1e4: number; q1e3: number; median: number };
  /** the identity pairs' median cross distances: their median, scaled MAD and lowest */
  identity_pair_medians: { median: number; mad: number; min: number };
  /** the robust z (below the identity pairs' medians) a pair must reach, negated, to be flagged */
  flag_z: number;
  /** how many identity pairs are flagged */
  flagged: number;
  /** the `top` identity pairs with the lowest median cross distance, closest first */
  closest: IdentityPair[];
}

const round = (x: number, d = 6) => Number(x.toFixed(d));

/** Number of values ≤ t in an ascending array. */
function countAtMost(sorted: ArrayLike<number>, t: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The median of values already in ascending order (the mean of the middle two for an even count). */
function medianSorted(s: ArrayLike<number>): number {
  if (s.length === 0) return Number.NaN;
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const medianOf = (values: number[]) => medianSorted(Float64Array.from(values).sort());

/**
 * The report from every pairwise distance of `n` items (`subjectOf[i]`: the index of item i's
 * identity in `labels`; `distance(i, j)` for i < j). `top` identity pairs are listed; a pair is
 * flagged when its median cross distance lies `flagZ` robust standard deviations or more below the
 * median of all identity pairs' medians (8 by default). Not a quantile of the impostor pairs: one
 * person under two labels puts genuine pairs among the impostor ones, so a second such pair looks
 * ordinary against them, and without any the closest ordinary pair of a set looks extreme. On the
 * development sets the ordinary identity pairs reach −7 (palms alike by chance), one person under
 * two labels −9 to −15, under palmid and under CompCode (docs/palm-pipeline.md, "Look-alike
 * identities").
 */
export function lookAlikeIdentities(
  labels: readonly string[],
  subjectOf: ArrayLike<number>,
  distance: (i: number, j: number) => number,
  options: { top?: number; flagZ?: number; onRow?: (i: number) => void } = {},
): LookAlikeReport {
  const n = subjectOf.length;
  const k = labels.length;
  const top = options.top ?? 10;
  const flagZ = options.flagZ ?? 8;
  const genuine: number[] = [];
  const impostor: number[] = [];
  // cross distances per identity pair, keyed a * k + b with a < b
  const cross = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const si = subjectOf[i]!;
      const sj = subjectOf[j]!;
      const d = distance(i, j);
      if (si === sj) {
        genuine.push(d);
        continue;
      }
      impostor.push(d);
      const key = si < sj ? si * k + sj : sj * k + si;
      let list = cross.get(key);
      if (!list) {
        list = [];
        cross.set(key, list);
      }
      list.push(d);
    }
    options.onRow?.(i);
  }
  const g = Float64Array.from(genuine).sort();
  const im = Float64Array.from(impostor).sort();
  const gMedian = percentileSorted(g, 0.5);
  const rows = [...cross.entries()].map(([key, list]) => {
    const s = Float64Array.from(list).sort();
    return { a: Math.floor(key / k), b: key % k, s, median: medianSorted(s) };
  });
  const medians = rows.map((r) => r.median);
  const mm = medianOf(medians);
  const mad = 1.4826 * medianOf(medians.map((m) => Math.abs(m - mm)));
  const describe = (r: (typeof rows)[number]): IdentityPair => {
    // the other identity pairs' impostor distances: all of them less this pair's own
    const closer = countAtMost(im, r.median) - countAtMost(r.s, r.median);
    const others = im.length - r.s.length;
    const q = others > 0 ? closer / others : Number.NaN;
    return {
      a: labels[r.a]!,
      b: labels[r.b]!,
      pairs: r.s.length,
      min: round(r.s[0]!),
      median: round(r.median),
      max: round(r.s[r.s.length - 1]!),
      impostors_closer: closer,
      impostor_quantile: round(q, 9),
      genuine_quantile: g.length > 0 ? round(countAtMost(g, r.median) / g.length) : null,
      below_genuine_median: g.length > 0 ? countAtMost(r.s, gMedian - 1e-12) : 0,
      robust_z: mad > 0 ? round((r.median - mm) / mad, 2) : 0,
      looks_genuine: mad > 0 && (r.median - mm) / mad <= -flagZ,
    };
  };
  const described = rows.map(describe);
  described.sort((x, y) => x.median - y.median || x.a.localeCompare(y.a) || x.b.localeCompare(y.b));
  return {
    identities: k,
    images: n,
    genuine_pairs: g.length,
    impostor_pairs: im.length,
    identity_pairs: rows.length,
    genuine:
      g.length > 0
        ? { median: round(gMedian), p95: round(percentileSorted(g, 0.95)), max: round(g[g.length - 1]!) }
        : null,
    impostor: {
      min: round(im[0] ?? Number.NaN),
      q1e4: round(percentileSorted(im, 1e-4)),
      q1e3: round(percentileSorted(im, 1e-3)),
      median: round(percentileSorted(im, 0.5)),
    },
    identity_pair_medians: {
      median: round(mm),
      mad: round(mad),
      min: round(medians.reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY)),
    },
    flag_z: flagZ,
    flagged: described.filter((p) => p.looks_genuine).length,
    closest: described.slice(0, top),
  };
}
