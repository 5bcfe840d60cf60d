import type { Random } from '@palmid/firmware-sim/rng';
import {
  type Candidate,
  decideIdentification,
  decisionBar,
  distanceForEvidence,
  evidenceAt,
  fmrAt,
  fusedEvidence,
  type IdentificationPolicy,
  type ImpostorModel,
  resolvePolicy,
} from '@palmid/palm/decision';
import { MIN_TAIL_PAIRS } from '@palmid/palm/impostor-fit';

/**
 * Open-set identification (ISO/IEC 19795-1 FPIR / FNIR) for galleries far larger than a
 * development set, through the shared decision (shared/palm/src/decision.ts), as `palm eval`
 * reports it (`open_set`, `open_set_fusion`).
 *
 * Protocol. Each palm (identity folder) enrols its first `enrol` images (one gallery template
 * each); a presentation is `frames` consecutive later images of the palm, fused as the decision
 * says frames are (best distance per user). Candidates are users (a person's palms: `0051/l` and
 * `0051/r` are one user), each at its best distance. The step-up's second capture is the
 * person's other hand where the set has both hands, else a second presentation of the same hand.
 *
 * Gallery of N palms: the set's own palms are real candidates; the other N − (set's palms) are
 * strangers drawn from `truth`, the impostor model fitted on the set's own impostor tail
 * (`@palmid/palm/impostor-fit`): their top order statistics in each capture, with their independent
 * evidence in the other capture. Evidence is read with the deployed policy's model, exactly as the
 * server reads it, so a deployed model that is lighter-tailed than the set shows up as FPIR above
 * target.
 *
 * The bar is the shared `decisionBar`: each of the flow's two decision points (the first capture,
 * the fused decision after a step-up) is taken at half the target, so that the flow keeps the target.
 *
 * - `fpir`: a stranger matched on one presentation, 1 − (1 − FMR(bar distance))^N, with FMR
 *   measured from the set's impostor pairs when at least MIN_TAIL_PAIRS of them lie at or below
 *   the bar (`fpir_method: "measured"`), else from `truth` ("extrapolated"). The margin rule is
 *   not credited (an upper bound).
 * - `fpir_step_up`: a stranger matched by the whole flow (first capture, or step-up then the fused
 *   decision): the first term plus the chance that a user's fused evidence reaches the bar after a
 *   step-up, integrated over `truth` (also an upper bound: margins not credited). This is the figure
 *   the target bounds; `fpir` alone stays near target / 2 when the deployed model is the truth.
 * - `fnir`, `fnir_step_up`, `step_up_rate`: over the set's genuine presentations, averaged over
 *   `draws` draws of the stranger candidates (seeded).
 * - `enrolled_as_another` (and `_step_up`): an enrolled person matched to another user, per
 *   presentation; the strangers' part is integrated exactly rather than drawn, because the rate
 *   sought (1e-5) lies far below what draws resolve.
 */
export interface OpenSetRow {
  gallery: number;
  /** the evidence bar (decades, −log10 FMR under the deployed model): the score the decision reads */
  threshold: number;
  /** the same bar as the matcher's raw distance */
  distance: number;
  fpir: number;
  fpir_method: 'measured' | 'extrapolated';
  fpir_step_up: number;
  fnir: number;
  fnir_step_up: number;
  /** genuine presentations asked to step up */
  step_up_rate: number;
  /** strangers asked to step up */
  stranger_step_up_rate: number;
  enrolled_as_another: number;
  enrolled_as_another_step_up: number;
  /**
   * `fnir` and `fnir_step_up` over the presentations of re-captured images only (images merged in
   * from another label with `--same`: the cross-session case); null when the set has none.
   */
  fnir_recaptures: number | null;
  fnir_step_up_recaptures: number | null;
}

export interface OpenSetPalm {
  /** the user the palm belongs to (a person; both hands of a person are one user) */
  person: string;
  /** indices (into `distance`) of the palm's enrolled images, capture order */
  images: number[];
  /**
   * The hand, where the set files hands apart (`l`, `r`): a search compares a probe with the palms
   * of its own side only, as the server's does (the decision's gallery is that side's palms).
   */
  side?: string | undefined;
  /**
   * Images (indices into `distance`) filed under another label of the same person and merged in
   * (`palm eval --same`): re-captures, typically another session. A presentation whose first
   * image is one counts in the rows' `*_recaptures` figures.
   */
  recaptured?: ReadonlySet<number> | undefined;
}

export interface OpenSetInput {
  palms: OpenSetPalm[];
  /** raw matcher distance between two images (the probe first) */
  distance: (probe: number, enrolled: number) => number;
  /** the set's impostor distances (per comparison), for the measured FMR */
  impostor: ArrayLike<number>;
  /** impostor model fitted on the set's tail: what strangers beyond the set are drawn from */
  truth: ImpostorModel;
}

export interface OpenSetOptions {
  galleries?: number[];
  policy?: Partial<IdentificationPolicy>;
  /** templates enrolled per palm (default 1) */
  enrol?: number;
  /** frames fused per presentation, best distance per user (default 1) */
  frames?: number;
  /** first image index presentations may use (default `enrol`) */
  probeStart?: number;
  /** draws of the stranger candidates per genuine presentation (default 64) */
  draws?: number;
  random: Random;
}

export interface OpenSetResult {
  rows: OpenSetRow[];
  /** genuine presentations, and how many had a second capture for the step-up */
  presentations: number;
  /** of them, presentations of re-captured images (`OpenSetPalm.recaptured`) */
  recaptured_presentations: number;
  with_second_capture: number;
  second_capture: 'other hand' | 'second presentation of the same hand' | 'mixed' | 'none';
  /** evidence (decades, deployed model) of the genuine presentations: 5th and 50th percentile */
  genuine_evidence_p05: number | null;
  genuine_evidence_p50: number | null;
}

export const OPEN_SET_GALLERIES = [1e3, 1e4, 1e5, 1e6];

const E_STEP = 0.02;
const E_MAX = 40;

/** Evidence grid: the deployed evidence scale against the true tail (per-comparison FMR). */
class Tail {
  readonly e: Float64Array;
  readonly q: Float64Array;
  readonly logq: Float64Array;
  constructor(deployed: ImpostorModel, truth: ImpostorModel) {
    const n = Math.round(E_MAX / E_STEP) + 1;
    this.e = new Float64Array(n);
    this.q = new Float64Array(n);
    this.logq = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const e = i * E_STEP;
      const d = distanceForEvidence(e, deployed);
      const q = i === 0 ? 1 : Math.min(1, fmrAt(d, truth));
      this.e[i] = e;
      this.q[i] = i > 0 ? Math.min(q, this.q[i - 1]!) : q;
      this.logq[i] = Math.log(Math.max(this.q[i]!, 1e-300));
    }
  }
  /** P(one comparison's evidence ≥ e) under the true model */
  at(e: number): number {
    if (e <= 0) return 1;
    const x = e / E_STEP;
    const i = Math.floor(x);
    if (i >= this.e.length - 1) return Math.exp(this.logq[this.e.length - 1]!);
    const t = x - i;
    return Math.exp(this.logq[i]! * (1 - t) + this.logq[i + 1]! * t);
  }
  /** the evidence (deployed scale) of a comparison whose true FMR is u */
  evidenceOf(u: number): number {
    const lu = Math.log(Math.max(u, 1e-300));
    const lq = this.logq;
    if (lu >= 0) return 0;
    if (lu <= lq[lq.length - 1]!) return E_MAX;
    let lo = 0;
    let hi = lq.length - 1;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (lq[mid]! >= lu) lo = mid;
      else hi = mid;
    }
    const span = lq[lo]! - lq[hi]!;
    const t = span > 0 ? (lq[lo]! - lu) / span : 0;
    return (lo + t) * E_STEP;
  }
}

/** Tail of a user's best over `c` independent comparisons, and of the sum of two such evidences. */
class UserTail {
  readonly q: Float64Array;
  readonly q2: Float64Array;
  constructor(
    readonly tail: Tail,
    readonly c: number,
  ) {
    const n = tail.e.length;
    this.q = new Float64Array(n);
    for (let i = 0; i < n; i++) this.q[i] = -Math.expm1(c * Math.log1p(-Math.min(tail.q[i]!, 1 - 1e-16)));
    this.q[0] = 1;
    // P(E1 + E2 ≥ s) = q(s) + ∫_0^s f(e) q(s − e) de, f = −q'
    this.q2 = new Float64Array(n);
    for (let j = 0; j < n; j++) {
      let s = this.q[j]!;
      for (let i = 0; i < j; i++) s += (this.q[i]! - this.q[i + 1]!) * this.q[j - i - 1]!;
      this.q2[j] = Math.min(1, s);
    }
  }
  private interp(a: Float64Array, e: number): number {
    if (e <= 0) return 1;
    const x = e / E_STEP;
    const i = Math.floor(x);
    if (i >= a.length - 1) return a[a.length - 1]!;
    const t = x - i;
    const lo = Math.log(Math.max(a[i]!, 1e-300));
    const hi = Math.log(Math.max(a[i + 1]!, 1e-300));
    return Math.exp(lo * (1 - t) + hi * t);
  }
  at(e: number): number {
    return this.interp(this.q, e);
  }
  sumAt(s: number): number {
    return this.interp(this.q2, s);
  }
  /** P(at least one of m users reaches e) */
  anyOf(m: number, p: number): number {
    return m <= 0 ? 0 : -Math.expm1(m * Math.log1p(-Math.min(p, 1 - 1e-16)));
  }
  /** evidence of a user whose best-of-c FMR is the uniform u */
  evidenceOfUser(u: number): number {
    return this.tail.evidenceOf(-Math.expm1(Math.log1p(-u) / this.c));
  }
}

/** The sum of two captures' evidences that `fusedEvidence(sum, 2)` turns into `bar`. */
function fusedSumFor(bar: number): number {
  let lo = bar;
  let hi = bar + 10;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (fusedEvidence(mid, 2) >= bar) hi = mid;
    else lo = mid;
  }
  return hi;
}

interface Presentation {
  user: number;
  /** the presentation's first image is a re-capture filed under another label */
  recaptured: boolean;
  /** best distance per user, capture 1 (and capture 2 for the step-up) */
  d1: Float64Array;
  d2: Float64Array | null;
}

function topOthers(values: Float64Array, skip: number, k: number): Array<{ user: number; v: number }> {
  const out: Array<{ user: number; v: number }> = [];
  for (let u = 0; u < values.length; u++) {
    if (u === skip) continue;
    const v = values[u]!;
    if (out.length < k || v > out[out.length - 1]!.v) {
      out.push({ user: u, v });
      out.sort((a, b) => b.v - a.v);
      if (out.length > k) out.pop();
    }
  }
  return out;
}

/** Order statistics of the top two of m uniforms (smallest first: the strongest strangers). */
function topTwoUniforms(m: number, random: Random): [number, number] {
  const v1 = 1 - random();
  const v2 = 1 - random();
  const u1 = -Math.expm1(Math.log(v1) / m);
  const u2 = m > 1 ? u1 + (1 - u1) * -Math.expm1(Math.log(v2) / (m - 1)) : 1;
  return [u1, u2];
}

const round = (x: number, d = 4) => (x === 0 ? 0 : Number(x.toPrecision(d)));

export function openSet(input: OpenSetInput, options: OpenSetOptions): OpenSetResult {
  const policy = resolvePolicy(options.policy);
  const enrol = Math.max(1, options.enrol ?? 1);
  const frames = Math.max(1, options.frames ?? 1);
  const start = Math.max(enrol, options.probeStart ?? enrol);
  const draws = Math.max(1, options.draws ?? 64);
  const galleries = options.galleries ?? OPEN_SET_GALLERIES;
  const tail = new Tail(policy.model, input.truth);
  // the gallery counts templates; a user's best over `enrol` templates and `frames` frames (as
  // independent as the set's captures) has the tail of the best of enrol × frames comparisons
  const users = new UserTail(tail, enrol * frames);

  const persons = [...new Set(input.palms.map((p) => p.person))];
  const personIndex = new Map(persons.map((p, i) => [p, i]));
  const gallery = input.palms
    .map((p) => ({ user: personIndex.get(p.person)!, templates: p.images.slice(0, enrol), side: p.side }))
    .filter((g) => g.templates.length === enrol);
  // the real palms a search compares (the largest side's, where hands are filed apart)
  const sides = new Map<string | undefined, number>();
  for (const g of gallery) sides.set(g.side, (sides.get(g.side) ?? 0) + 1);
  const realPalms = Math.max(0, ...sides.values());
  const bestPerUser = (images: number[], side: string | undefined): Float64Array => {
    const best = new Float64Array(persons.length).fill(Number.POSITIVE_INFINITY);
    for (const g of gallery)
      if (g.side === side)
        for (const t of g.templates)
          for (const im of images) {
            const d = input.distance(im, t);
            if (d < best[g.user]!) best[g.user] = d;
          }
    return best;
  };
  const groups = (palm: OpenSetPalm): number[][] => {
    const out: number[][] = [];
    for (let i = start; i + frames <= palm.images.length; i += frames)
      out.push(palm.images.slice(i, i + frames));
    return out;
  };
  const presentations: Array<Presentation & { otherHand: boolean }> = [];
  let otherHand = 0;
  let samePalm = 0;
  for (const palm of input.palms) {
    if (palm.images.length < enrol) continue;
    const user = personIndex.get(palm.person)!;
    const mine = groups(palm);
    const other = input.palms.find((p) => p !== palm && p.person === palm.person && groups(p).length > 0);
    const otherGroups = other ? groups(other) : [];
    for (const [i, g] of mine.entries()) {
      let second: number[] | null = null;
      if (otherGroups.length > 0) {
        second = otherGroups[i % otherGroups.length]!;
        otherHand++;
      } else if (mine.length > 1) {
        second = mine[(i + 1) % mine.length]!;
        samePalm++;
      }
      const secondSide = otherGroups.length > 0 ? other!.side : palm.side;
      presentations.push({
        user,
        recaptured: palm.recaptured?.has(g[0]!) === true,
        d1: bestPerUser(g, palm.side),
        d2: second ? bestPerUser(second, secondSide) : null,
        otherHand: otherGroups.length > 0,
      });
    }
  }
  const withSecond = otherHand + samePalm;
  const independentMode = otherHand >= samePalm;
  const ev = (d: number) => (Number.isFinite(d) ? evidenceAt(d, policy.model) : 0);
  // evidence per presentation: the genuine user's and the strongest real rivals', per capture and fused
  const prepared = presentations.map((p) => {
    const e1 = Float64Array.from(p.d1, ev);
    const e2 = p.d2 ? Float64Array.from(p.d2, ev) : null;
    // two hands are independent evidence (summed, Fisher); the same hand twice is not: best per user
    const sum = e2 ? Float64Array.from(e1, (x, u) => (p.otherHand ? x + e2[u]! : Math.max(x, e2[u]!))) : null;
    return {
      user: p.user,
      recaptured: p.recaptured,
      independent: p.otherHand,
      g1: e1[p.user]!,
      g2: e2 ? e2[p.user]! : null,
      rivals1: topOthers(e1, p.user, 3),
      rivalsSum: sum ? topOthers(sum, p.user, 3) : [],
      gSum: sum ? sum[p.user]! : null,
    };
  });
  const recaptured = prepared.filter((p) => p.recaptured).length;
  const gEvidence = prepared.map((p) => p.g1).sort((a, b) => a - b);
  const quantile = (q: number) =>
    gEvidence.length === 0
      ? null
      : round(gEvidence[Math.min(gEvidence.length - 1, Math.floor(q * gEvidence.length))]!);

  const impostorSorted = Float64Array.from(input.impostor as ArrayLike<number>).sort();
  const rows: OpenSetRow[] = [];
  for (const n of galleries) {
    const templates = n * enrol;
    const bar = decisionBar(templates, policy.targetFpir);
    const barDistance = distanceForEvidence(bar, policy.model);
    const strangersPalms = Math.max(0, n - realPalms);
    // --- strangers (no mate in the gallery), per-comparison FMR at the bar ---
    let count = 0;
    while (count < impostorSorted.length && impostorSorted[count]! <= barDistance) count++;
    const measured = enrol * frames === 1 && count >= MIN_TAIL_PAIRS;
    const fmrBar = measured ? count / impostorSorted.length : users.at(bar);
    const fpir = users.anyOf(n, fmrBar);
    const stepLo = bar - policy.stepUpWindow;
    const strangerStepUp = Math.max(0, users.anyOf(n, users.at(stepLo)) - users.anyOf(n, users.at(bar)));
    // after a step-up, a user whose fused evidence reaches the bar: the user who triggered it
    // (first evidence in [bar − window, bar)), or any other user given that a step-up happened
    // the other hand's fused sum is the best of enrol × enrol template pairs per user: the decision
    // lowers it by log10(enrol) (Candidate.pairs), so a fused match needs this sum
    const sb = fusedSumFor(bar + Math.log10(enrol));
    let near = 0;
    let far = 0;
    for (let i = 0; i + 1 < users.q.length; i++) {
      const e = (i + 0.5) * E_STEP;
      const mass = users.q[i]! - users.q[i + 1]!;
      if (e >= bar) break;
      const reach = users.at(sb - e);
      if (e >= stepLo) near += mass * reach;
      else far += mass * reach;
    }
    // the other hand: Fisher's fused evidence per user; a second presentation of the same hand: each
    // user's best over both captures, the second taken as a fresh chance at the bar (an upper bound)
    const fpirStepUp = Math.min(
      1,
      independentMode
        ? fpir + Math.min(1, n * near) + strangerStepUp * Math.min(1, n * far)
        : fpir + strangerStepUp * users.anyOf(n, users.at(bar)),
    );
    // --- genuine presentations ---
    let correct1 = 0;
    let correctFlow = 0;
    let stepUps = 0;
    let wrong1 = 0;
    let wrongFlow = 0;
    // the same counts over re-captured presentations
    let recapCorrect1 = 0;
    let recapCorrectFlow = 0;
    for (const p of prepared) {
      const before1 = correct1;
      const beforeFlow = correctFlow;
      const real1: Candidate[] = [
        { userId: `u${p.user}`, evidence: p.g1 },
        ...p.rivals1.map((r) => ({ userId: `u${r.user}`, evidence: r.v })),
      ];
      const realSum: Candidate[] =
        p.g2 === null
          ? []
          : [
              { userId: `u${p.user}`, evidence: p.gSum! },
              ...p.rivalsSum.map((r) => ({ userId: `u${r.user}`, evidence: r.v })),
            ];
      // enrolled as another, one presentation: a real rival, or a stranger beyond every other candidate by the margin
      const realOnly = decideIdentification({ gallery: templates, candidates: real1, policy });
      const realWrong = realOnly.kind === 'match' && realOnly.userId !== `u${p.user}`;
      const topReal = Math.max(p.g1, p.rivals1[0]?.v ?? 0);
      const pWrong1 = realWrong
        ? 1
        : users.anyOf(strangersPalms, users.at(Math.max(bar, topReal + policy.margin)));
      let stepped = 0;
      for (let r = 0; r < draws; r++) {
        const cands = [...real1];
        const fused = [...realSum];
        if (strangersPalms > 0) {
          const [a1, a2] = topTwoUniforms(strangersPalms, options.random);
          const ea1 = users.evidenceOfUser(a1);
          const ea2 = users.evidenceOfUser(a2);
          cands.push({ userId: 's1', evidence: ea1 }, { userId: 's2', evidence: ea2 });
          if (p.g2 !== null) {
            // the strangers' other capture: independent draws (for the same hand an upper bound:
            // two captures of one hand resemble a stranger's palm alike)
            const join = (a: number, b: number) => (p.independent ? a + b : Math.max(a, b));
            const [b1, b2] = topTwoUniforms(strangersPalms, options.random);
            fused.push(
              { userId: 's1', evidence: join(ea1, users.evidenceOfUser(options.random())) },
              { userId: 's2', evidence: join(ea2, users.evidenceOfUser(options.random())) },
              {
                userId: 's3',
                evidence: join(users.evidenceOfUser(b1), users.evidenceOfUser(options.random())),
              },
              {
                userId: 's4',
                evidence: join(users.evidenceOfUser(b2), users.evidenceOfUser(options.random())),
              },
            );
          }
        }
        const one = decideIdentification({ gallery: templates, candidates: cands, policy });
        if (one.kind === 'match' && one.userId === `u${p.user}`) correct1++;
        const flow = decideIdentification({ gallery: templates, candidates: cands, policy, canStepUp: true });
        if (flow.kind === 'match') {
          if (flow.userId === `u${p.user}`) correctFlow++;
        } else if (flow.kind === 'step_up') {
          stepUps++;
          stepped++;
          if (p.g2 !== null) {
            const second = decideIdentification({
              gallery: templates,
              candidates: p.independent ? fused.map((c) => ({ ...c, pairs: enrol })) : fused,
              policy,
              captures: p.independent ? 2 : 1,
            });
            if (second.kind === 'match' && second.userId === `u${p.user}`) correctFlow++;
          }
        }
      }
      // enrolled as another through the step-up: the fused decision picks another user
      let pWrongFused = 0;
      if (p.g2 !== null && stepped > 0) {
        const captures = p.independent ? 2 : 1;
        const realFused = decideIdentification({
          gallery: templates,
          candidates: p.independent ? realSum.map((c) => ({ ...c, pairs: enrol })) : realSum,
          policy,
          captures,
        });
        const topSum = Math.max(p.gSum!, p.rivalsSum[0]?.v ?? 0);
        pWrongFused =
          realFused.kind === 'match' && realFused.userId !== `u${p.user}`
            ? 1
            : p.independent
              ? users.anyOf(strangersPalms, users.sumAt(Math.max(sb, topSum + policy.margin)))
              : users.anyOf(2 * strangersPalms, users.at(Math.max(bar, topSum + policy.margin)));
      }
      wrong1 += pWrong1;
      wrongFlow += pWrong1 + (stepped / draws) * pWrongFused;
      if (p.recaptured) {
        recapCorrect1 += correct1 - before1;
        recapCorrectFlow += correctFlow - beforeFlow;
      }
    }
    const recapTotal = recaptured * draws;
    const total = prepared.length * draws;
    const m = prepared.length;
    rows.push({
      gallery: n,
      threshold: round(bar, 5),
      distance: round(barDistance, 5),
      fpir: round(fpir),
      fpir_method: measured ? 'measured' : 'extrapolated',
      fpir_step_up: round(fpirStepUp),
      fnir: m === 0 ? 1 : round(1 - correct1 / total),
      fnir_step_up: m === 0 ? 1 : round(1 - correctFlow / total),
      step_up_rate: m === 0 ? 0 : round(stepUps / total),
      stranger_step_up_rate: round(strangerStepUp),
      enrolled_as_another: m === 0 ? 0 : round(wrong1 / m),
      enrolled_as_another_step_up: m === 0 ? 0 : round(wrongFlow / m),
      fnir_recaptures: recaptured === 0 ? null : round(1 - recapCorrect1 / recapTotal),
      fnir_step_up_recaptures: recaptured === 0 ? null : round(1 - recapCorrectFlow / recapTotal),
    });
  }
  return {
    rows,
    presentations: prepared.length,
    recaptured_presentations: recaptured,
    with_second_capture: withSecond,
    second_capture:
      withSecond === 0
        ? 'none'
        : otherHand > 0 && samePalm > 0
          ? 'mixed'
          : otherHand > 0
            ? 'other hand'
            : 'second presentation of the same hand',
    genuine_evidence_p05: quantile(0.05),
    genuine_evidence_p50: quantile(0.5),
  };
}
