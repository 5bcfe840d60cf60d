/**
 * Open-set identification decision (issue #24, CONTRACT §10 "Identification decides for the whole
 * gallery"). One function decides for the server's `identify`, the enrolment duplicate check,
 * `palm eval` and the benchmarks.
 *
 * Model (Daugman, "How iris recognition works"): the matcher's raw distance d of an impostor pair
 * (the number `compareTemplates` and the gallery search minimise; score = 1 − 2d) behaves like
 * Binomial(dof, p) / dof, with p the impostor mean distance and dof = p(1 − p) / variance. The
 * false-match rate of one comparison is FMR(d) = P(X ≤ d · dof), computed in log space through the
 * regularised incomplete beta function (the continuous extension of the binomial CDF, so it is
 * smooth and monotone in d and exact at integer d · dof). Evidence E(d) = −log10 FMR(d), in
 * decades, is the scale the decision reads.
 *
 * A search over N palms keeps its false-positive identification rate at the target when each of
 * its comparisons' FMR is at most 1 − (1 − target)^(1/N); the evidence bar is −log10 of that,
 * ≈ log10(N / target). So the bar grows by one decade per tenfold gallery.
 *
 * The target is the FPIR of the whole flow a stranger goes through, not of one decision: with the
 * step-up a stranger meets two decision points (the first capture; then, when asked, the fused
 * decision on both hands), so each decision is taken at target / DECISION_POINTS (`decisionBar`).
 */

import type { TemplateCoding } from './template.ts';

export interface ImpostorModel {
  /** Mean impostor distance (the binomial's success probability). */
  p: number;
  /** Daugman's degrees of freedom: p(1 − p) / variance of the impostor distances. */
  dof: number;
}

/**
 * Fitted on the development sets' impostor tails by `palm eval` (`impostor_model.tail`: the (p, dof)
 * whose log10 FMR matches the measured one at the set's tail quantiles, FMR 1e-2 down to the
 * smallest that ≥ 10 pairs resolve; docs/palm-pipeline.md "Identification at scale"):
 * - CASIA-PalmprintV1 0051+ (grey-dark, 3.5 M impostor pairs): p 0.4284, dof 475, within 0.03
 *   decades of the measured FMR from 1e-1 down to 3e-6;
 * - COEP 055+ (colour, one label per person): p 0.4304, dof 411 on its 39 616 impostor pairs
 *   outside five look-alike identity pairs (0.015 decades down to 3e-4); those five pairs' 80
 *   cross pairs make a tail no per-comparison model describes (see the docs).
 * The default is the heavier of the two (less evidence per distance, so FPIR ≤ target on both):
 * FMR(0.3375) = 7.3e-5, inside what issue #24 measured at the old threshold (2.4e-5 … 6.2e-4).
 * The moment fit (p = mean, dof = p(1 − p)/variance) is off by 0.4 decades in these tails.
 * Re-derived by `npm run palm -- calibrate decision <casia-refiled> <coep-dir> …` (docs/calibrate.md).
 */
export const DEFAULT_IMPOSTOR_MODEL: ImpostorModel = { p: 0.4304, dof: 411.1 };

/**
 * The impostor model of each template coding (template.ts `TemplateCoding`). `wide`:
 * DEFAULT_IMPOSTOR_MODEL above, fitted on the development sets coded `wide`. `fine`: the same
 * procedure on the same sets coded `fine` (σ 2.2 + 2.8, without the principal-line scale), every
 * impostor pair kept: CASIA 0051+ p 0.445 / dof 721.4, COEP 055+ (eight re-captured persons merged)
 * p 0.439 / dof 798.5; the heavier of the two at the million-palm bar (COEP's, by a hair: the bars lie
 * at 0.32813 and 0.32816). Re-derived by `npm run palm -- calibrate decision <casia-refiled>
 * <coep-dir> …` (docs/calibrate.md).
 */
export const IMPOSTOR_MODELS: Readonly<Record<TemplateCoding, ImpostorModel>> = {
  wide: DEFAULT_IMPOSTOR_MODEL,
  fine: { p: 0.439, dof: 798.5 },
};

/** The shipped impostor model of a template coding. */
export function impostorModelFor(coding: TemplateCoding = 'wide'): ImpostorModel {
  return IMPOSTOR_MODELS[coding];
}

/**
 * Target false-positive identification rate of one identification flow, step-up included (env
 * PALMID_TARGET_FPIR on the server): each of its two decision points gets half (`decisionBar`).
 */
export const DEFAULT_TARGET_FPIR = 1e-4;

const LN10 = Math.LN10;

// Lanczos approximation (g = 7, n = 9): ln Γ(x) to ~1e-15 relative for x > 0.
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

export function logGamma(x: number): number {
  if (x < 0.5) {
    // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
    return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
  }
  const z = x - 1;
  let a = LANCZOS[0]!;
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += LANCZOS[i]! / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** Continued fraction of the incomplete beta function (modified Lentz). */
function betaContinuedFraction(a: number, b: number, x: number): number {
  const TINY = 1e-300;
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < TINY) d = TINY;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 10_000; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 1e-15) break;
  }
  return h;
}

/** ln I_x(a, b), the regularised incomplete beta function, accurate in its lower tail. */
function logIncompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return Number.NEGATIVE_INFINITY;
  if (x >= 1) return 0;
  const logFront = logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x);
  if (x < (a + 1) / (a + b + 2)) {
    return logFront + Math.log(betaContinuedFraction(a, b, x)) - Math.log(a);
  }
  // Upper part: 1 − I_{1−x}(b, a); only reached far from the tail, where it is well conditioned.
  const upper = Math.exp(logFront + Math.log(betaContinuedFraction(b, a, 1 - x)) - Math.log(b));
  return Math.log1p(-Math.min(upper, 1));
}

function checkModel(model: ImpostorModel): void {
  if (!(model.p > 0 && model.p < 1) || !(model.dof > 1) || !Number.isFinite(model.dof)) {
    throw new RangeError(`impostor model needs 0 < p < 1 and dof > 1 (got p=${model.p}, dof=${model.dof})`);
  }
}

/** ln FMR(d): natural log of the per-comparison false-match rate at raw distance `distance`. */
export function logFmrAt(distance: number, model: ImpostorModel = DEFAULT_IMPOSTOR_MODEL): number {
  checkModel(model);
  if (Number.isNaN(distance)) return 0;
  if (distance >= 1) return 0;
  const n = model.dof;
  const k = Math.max(0, distance) * n;
  // P(X ≤ k) for X ~ Binomial(n, p) = I_{1−p}(n − k, k + 1).
  return Math.min(0, logIncompleteBeta(1 - model.p, n - k, k + 1));
}

/** Per-comparison false-match rate at raw distance `distance` (the binomial impostor model's CDF). */
export function fmrAt(distance: number, model: ImpostorModel = DEFAULT_IMPOSTOR_MODEL): number {
  return Math.exp(logFmrAt(distance, model));
}

/** Evidence of a comparison at raw distance `distance`: −log10 FMR(d), in decades (≥ 0). */
export function evidenceAt(distance: number, model: ImpostorModel = DEFAULT_IMPOSTOR_MODEL): number {
  const e = -logFmrAt(distance, model) / LN10;
  return Math.max(e, 0);
}

/**
 * The raw distance at which the evidence equals `evidence` (the inverse of `evidenceAt`, by
 * bisection): a candidate at a distance ≤ this has at least that evidence. Clamped to [0, 1]:
 * evidence beyond what distance 0 carries returns 0, evidence ≤ 0 returns 1.
 */
export function distanceForEvidence(evidence: number, model: ImpostorModel = DEFAULT_IMPOSTOR_MODEL): number {
  if (!(evidence > 0)) return 1;
  if (evidenceAt(0, model) <= evidence) return 0;
  let lo = 0; // evidence(lo) > target
  let hi = 1; // evidence(hi) = 0 ≤ target
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (evidenceAt(mid, model) >= evidence) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * Evidence a candidate needs so that a search over `gallery` palms keeps FPIR ≤ `targetFpir`:
 * −log10(1 − (1 − target)^(1/gallery)) ≈ log10(gallery / target). Grows with the gallery, falls
 * as the target grows. A gallery below 1 counts as 1.
 */
export function evidenceBar(gallery: number, targetFpir: number): number {
  if (!(targetFpir > 0 && targetFpir < 1)) {
    throw new RangeError(`target FPIR must lie in (0, 1) (got ${targetFpir})`);
  }
  const n = Number.isFinite(gallery) && gallery > 1 ? gallery : 1;
  // 1 − (1 − t)^(1/n), without cancellation.
  const perComparison = -Math.expm1(Math.log1p(-targetFpir) / n);
  return -Math.log10(perComparison);
}

/**
 * Decision points of the longest flow a stranger can go through: the first capture, and the fused
 * decision after a step-up. A client of `POST /api/v1/auth` can reproduce that flow itself (one
 * capture, then two), so every decision counts as one of the two, whatever the device can do
 * (repeated attempts are the rate limits' matter, not this budget's).
 *
 * Why an even split by the union bound, not an exact one: P(flow matches a stranger) ≤
 * P(first decision matches) + P(fused decision matches) ≤ target/2 + target/2, whatever the
 * dependence between the two decisions (they are dependent: the step-up is triggered by the first
 * capture's evidence, which the fused decision reuses). An exact split would credit that the fused
 * decision is only reached after a step-up (≈ 5 % of strangers) and so let the first decision keep
 * nearly the whole target, but that credit is computed from the impostor model's independence
 * across hands and across users, the part of the model real sets break first (look-alike palms,
 * one palm enrolled twice). The split costs log10 2 = 0.3 decades on each bar.
 *
 * Each decision is calibrated when `gallery` counts what its evidence is the best of. For one
 * capture that holds with several templates per palm (the gallery counts templates). The fused
 * sum of two hands is the best of kL × kR template pairs of a user with kL and kR templates, while
 * the gallery counts one hand's templates; `Candidate.pairs` = max(kL, kR) lowers the fused
 * evidence by log10 of it, so that Σ_users kL·kR / max(kL, kR) ≤ the templates of either hand
 * ≤ the gallery read. With the exact model `palm eval` puts the whole flow at 0.62–0.68 × target
 * with one, three or five templates per palm (N = 1e6 … 1e3); without the correction three
 * templates reach 0.89–1.0 × and five more.
 */
export const DECISION_POINTS = 2;

/**
 * The evidence bar one identification decision applies for a gallery of `gallery` palms (the
 * target's share of one decision point): `evidenceBar(gallery, targetFpir / DECISION_POINTS)`.
 * Server, enrolment duplicate check, `palm eval` and the benchmarks read the bar from here.
 */
export function decisionBar(gallery: number, targetFpir: number): number {
  if (!(targetFpir > 0 && targetFpir < 1)) {
    throw new RangeError(`target FPIR must lie in (0, 1) (got ${targetFpir})`);
  }
  return evidenceBar(gallery, targetFpir / DECISION_POINTS);
}

/**
 * Combined evidence of `captures` independent captures whose evidences sum to `sum` (Fisher's
 * method): for a stranger each capture's FMR is uniform, so the sum S of k evidences has
 * P(sum ≥ S) = 10^−S · Σ_{i<k} (S ln10)^i / i!. Returns −log10 of that, which the same bar as a
 * single capture applies to. One capture: the sum itself.
 */
export function fusedEvidence(sum: number, captures: number): number {
  if (!(sum > 0)) return 0;
  const k = Math.max(1, Math.floor(captures));
  if (k === 1) return sum;
  const lambda = sum * LN10;
  let term = 1;
  let series = 1;
  for (let i = 1; i < k; i++) {
    term *= lambda / i;
    series += term;
  }
  const e = sum - Math.log10(series);
  return Math.max(e, 0);
}

export interface IdentificationPolicy {
  /** Target false-positive identification rate of the whole flow (both decision points). */
  targetFpir: number;
  /** Decades by which the best user must beat the next different user. */
  margin: number;
  /** Decades below the bar within which a candidate is plausible enough to ask for more evidence. */
  stepUpWindow: number;
  /**
   * Decades of evidence at which a second, different user makes one capture ambiguous whatever the
   * best user's lead. A constant, not the gallery's bar: a rule that read the bar would let a larger
   * gallery (or a looser target) push the second user under it and turn a refusal into a match.
   */
  ambiguityFloor: number;
  model: ImpostorModel;
}

/**
 * The evidence that identifies one palm among a million at the default target: a second user who
 * reaches it would be identified on their own in a gallery of the design's scale, so chance does not
 * explain them at any size up to that (a look-alike palm, one palm enrolled twice).
 */
export const AMBIGUITY_FLOOR = decisionBar(1e6, DEFAULT_TARGET_FPIR);

/**
 * margin 2 decades: the best user must be 100 × less likely to be a chance match than the next
 * user. ambiguityFloor: AMBIGUITY_FLOOR. stepUpWindow 3 decades: a stranger is asked to step up with probability ≈ (target / 2) ×
 * 10³ (5 % at the default target), and Fisher fusion keeps the fused decision at its bar.
 */
export const DEFAULT_POLICY: IdentificationPolicy = {
  targetFpir: DEFAULT_TARGET_FPIR,
  margin: 2,
  stepUpWindow: 3,
  ambiguityFloor: AMBIGUITY_FLOOR,
  model: DEFAULT_IMPOSTOR_MODEL,
};

/**
 * Best evidence per DIFFERENT user. Each entry may stand for several independent captures, its
 * evidence then being the sum of the captures' evidences for that user (e.g. left + right hand);
 * frames of one presentation are NOT independent: fuse them by taking the best distance per user.
 */
export interface Candidate {
  userId: string;
  evidence: number;
  /**
   * Fused captures only (`captures` > 1): the larger of the user's template counts on the hands
   * summed (default 1). Its fused evidence is lowered by log10(pairs): the sum is the best of
   * kL × kR template pairs while the gallery counts one hand's templates (see DECISION_POINTS).
   */
  pairs?: number | undefined;
}

export type IdentificationDecision =
  | { kind: 'match'; userId: string; evidence: number; bar: number }
  | { kind: 'step_up'; userId: string; evidence: number; bar: number }
  | { kind: 'no_match'; reason: 'below_bar' | 'ambiguous' | 'empty'; bar: number };

export interface IdentificationInput {
  /** Number of palms actually searched (e.g. only the probe's hand). */
  gallery: number;
  candidates: Candidate[];
  policy?: Partial<IdentificationPolicy>;
  /** Whether the capture device can give more evidence in the same context (the other hand). */
  canStepUp?: boolean;
  /**
   * How many independent captures each candidate's evidence sums (default 1). With k > 1 the sum
   * is converted by Fisher's method (`fusedEvidence`) before it meets the bar, so that a fused
   * decision keeps the same FPIR; the margin is read on the sums.
   */
  captures?: number;
}

export function resolvePolicy(policy?: Partial<IdentificationPolicy>): IdentificationPolicy {
  return { ...DEFAULT_POLICY, ...(policy ?? {}) };
}

/**
 * The open-set decision, one of the flow's decision points (its bar: `decisionBar`, so that the
 * first capture and the fused decision after a step-up keep FPIR ≤ target together). Match when
 * the best user's evidence reaches the bar for this gallery and
 * beats the next different user by the margin, and (one capture) that next user does not reach the
 * policy's ambiguity floor (then: ambiguous, or a step-up). Every condition of a match tightens as
 * the gallery grows or the target falls, so neither can turn a refusal into a match. Two users near the bar without the margin:
 * ambiguous (step-up when the device can give more). A best user within `stepUpWindow` below the
 * bar with the margin met: step-up when possible, else below_bar. Anything else: below_bar.
 */
export function decideIdentification(input: IdentificationInput): IdentificationDecision {
  const policy = resolvePolicy(input.policy);
  const bar = decisionBar(input.gallery, policy.targetFpir);
  const captures = input.captures ?? 1;
  let best: Candidate | undefined;
  let second = 0;
  for (const c of input.candidates) {
    const e = Number.isFinite(c.evidence) ? c.evidence : 0;
    if (best === undefined || e > best.evidence) {
      if (best !== undefined && best.userId !== c.userId && best.evidence > second) {
        second = best.evidence;
      }
      best = { userId: c.userId, evidence: e, pairs: c.pairs };
    } else if (c.userId !== best.userId && e > second) {
      second = e;
    }
  }
  if (best === undefined) return { kind: 'no_match', reason: 'empty', bar };
  const pairs = captures > 1 && best.pairs !== undefined && best.pairs > 1 ? best.pairs : 1;
  const evidence = Math.max(0, fusedEvidence(best.evidence, captures) - Math.log10(pairs));
  const canStepUp = input.canStepUp === true;
  // One capture that two users each explain beyond what chance explains at the design's scale: at
  // most one of them is the person, so the impostor model cannot say which (e.g. look-alike palms,
  // one palm enrolled twice). Never a guess: ambiguous, or the other hand decides (a step-up). On
  // fused captures the margin decides: a user who matches one hand only falls far behind.
  if (captures <= 1 && second >= policy.ambiguityFloor)
    return canStepUp
      ? { kind: 'step_up', userId: best.userId, evidence, bar }
      : { kind: 'no_match', reason: 'ambiguous', bar };
  const marginMet = best.evidence - second >= policy.margin;
  const plausible = evidence >= bar - policy.stepUpWindow;
  if (evidence >= bar && marginMet) {
    return { kind: 'match', userId: best.userId, evidence, bar };
  }
  if (!plausible) return { kind: 'no_match', reason: 'below_bar', bar };
  if (canStepUp) return { kind: 'step_up', userId: best.userId, evidence, bar };
  return { kind: 'no_match', reason: marginMet ? 'below_bar' : 'ambiguous', bar };
}
