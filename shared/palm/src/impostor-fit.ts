import { fmrAt, type ImpostorModel } from './decision.ts';

/**
 * Fitting the binomial impostor model of the shared decision (shared/palm/src/decision.ts) on a
 * set's impostor distances, and the check that it agrees with what the set measures.
 *
 * - `moments`: Daugman's fit, p = mean, dof = p(1 − p) / variance: right for the bulk;
 * - `tail`: (p, dof) chosen so that the model's log10 FMR matches the measured log10 FMR at the
 *   set's lower-tail quantiles (FMR from 1e-2 down to the smallest one ≥ `MIN_TAIL_PAIRS` pairs
 *   resolve), which is where an identification bar lives. The minimum over the tile search's
 *   shifts makes real impostor tails heavier than the moment fit predicts, so `tail` is the one to
 *   extrapolate with.
 */
export interface ModelCheckPoint {
  /** distance at which the set measures `fmr_measured` */
  distance: number;
  /** impostor pairs at or below `distance` */
  pairs: number;
  fmr_measured: number;
  fmr_moments: number;
  fmr_tail: number;
}

export interface ImpostorFit {
  impostor_pairs: number;
  moments: ImpostorModel;
  tail: ImpostorModel;
  /** root-mean-square error of log10 FMR (decades) over the tail's check points */
  tail_rms_decades: { moments: number; tail: number };
  check: ModelCheckPoint[];
}

/** The fewest impostor pairs at or below a distance for its FMR to count as measured. */
export const MIN_TAIL_PAIRS = 10;

const round = (x: number, d = 6) => Number(x.toPrecision(d));

/** Sorted copy (ascending). */
function ascending(values: ArrayLike<number>): Float64Array {
  return Float64Array.from(values as ArrayLike<number>).sort();
}

/** FMR levels the check and the tail fit read: 1e-1, 3e-2, 1e-2 … down to what the set resolves. */
function levels(pairs: number): number[] {
  const out: number[] = [];
  for (let e = 1; e <= 12; e++)
    for (const m of [1, 0.3]) {
      const f = m * 10 ** -e;
      if (f * pairs >= MIN_TAIL_PAIRS) out.push(f);
    }
  return out;
}

function point(sorted: Float64Array, fmr: number): { distance: number; pairs: number; fmr: number } {
  const k = Math.max(1, Math.round(fmr * sorted.length));
  const distance = sorted[k - 1]!;
  // pairs at or below that distance (ties included)
  let hi = k;
  while (hi < sorted.length && sorted[hi]! <= distance) hi++;
  return { distance, pairs: hi, fmr: hi / sorted.length };
}

function rms(points: Array<{ distance: number; fmr: number }>, model: ImpostorModel): number {
  if (points.length === 0) return 0;
  let s = 0;
  for (const p of points) {
    const e = Math.log10(fmrAt(p.distance, model)) - Math.log10(p.fmr);
    s += e * e;
  }
  return Math.sqrt(s / points.length);
}

export function fitImpostorModel(impostor: ArrayLike<number>): ImpostorFit {
  const sorted = ascending(impostor);
  const n = sorted.length;
  if (n < 2) throw new Error('need at least two impostor distances');
  let mean = 0;
  for (const d of sorted) mean += d;
  mean /= n;
  let v = 0;
  for (const d of sorted) v += (d - mean) ** 2;
  v /= n - 1;
  const moments: ImpostorModel = { p: mean, dof: v > 0 ? (mean * (1 - mean)) / v : 1e6 };
  const pts = levels(n).map((f) => point(sorted, f));
  const tailPts = pts.filter((p) => p.fmr <= 1.5e-2);
  // grid search, then a finer one around the best: p within ±0.12 of the mean, dof 20 … 5000
  let best = moments;
  let bestErr = rms(tailPts, moments);
  const search = (pLo: number, pHi: number, dLo: number, dHi: number, steps: number) => {
    for (let i = 0; i <= steps; i++)
      for (let j = 0; j <= steps; j++) {
        const p = pLo + ((pHi - pLo) * i) / steps;
        const dof = Math.exp(Math.log(dLo) + ((Math.log(dHi) - Math.log(dLo)) * j) / steps);
        if (!(p > 0.01 && p < 0.99)) continue;
        const m = { p, dof };
        const err = rms(tailPts, m);
        if (err < bestErr) {
          bestErr = err;
          best = m;
        }
      }
  };
  if (tailPts.length >= 2) {
    search(mean - 0.12, mean + 0.12, 20, 5000, 24);
    search(best.p - 0.01, best.p + 0.01, best.dof / 1.3, best.dof * 1.3, 20);
  }
  const tail = { p: round(best.p, 4), dof: round(best.dof, 4) };
  return {
    impostor_pairs: n,
    moments: { p: round(moments.p, 4), dof: round(moments.dof, 4) },
    tail,
    tail_rms_decades: { moments: round(rms(tailPts, moments), 3), tail: round(rms(tailPts, tail), 3) },
    check: pts.map((p) => ({
      distance: round(p.distance, 5),
      pairs: p.pairs,
      fmr_measured: round(p.fmr, 4),
      fmr_moments: round(fmrAt(p.distance, moments), 4),
      fmr_tail: round(fmrAt(p.distance, tail), 4),
    })),
  };
}
