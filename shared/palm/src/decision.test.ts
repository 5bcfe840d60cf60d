import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Candidate,
  DECISION_POINTS,
  DEFAULT_IMPOSTOR_MODEL,
  DEFAULT_POLICY,
  DEFAULT_TARGET_FPIR,
  decideIdentification,
  decisionBar,
  distanceForEvidence,
  evidenceAt,
  evidenceBar,
  fmrAt,
  fusedEvidence,
  logFmrAt,
} from './decision.ts';

/** ln P(X ≤ k), X ~ Binomial(n, p), by an exact log-sum of the binomial terms. */
function exactLogCdf(k: number, n: number, p: number): number {
  const logs: number[] = [];
  let logChoose = 0; // ln C(n, 0)
  for (let j = 0; j <= k; j++) {
    if (j > 0) logChoose += Math.log(n - j + 1) - Math.log(j);
    logs.push(logChoose + j * Math.log(p) + (n - j) * Math.log1p(-p));
  }
  const max = Math.max(...logs);
  return max + Math.log(logs.reduce((s, l) => s + Math.exp(l - max), 0));
}

const modelArb = fc.record({
  p: fc.double({ min: 0.2, max: 0.49, noNaN: true }),
  dof: fc.double({ min: 50, max: 1200, noNaN: true }),
});

describe('impostor model', () => {
  it('matches an exact binomial sum at integer points, deep into the tail', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 400 }),
        fc.double({ min: 0.2, max: 0.5, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (n, p, frac) => {
          const k = Math.floor(frac * n * p); // the lower tail: k ≤ n·p
          const exact = exactLogCdf(k, n, p);
          const got = logFmrAt(k / n, { p, dof: n });
          // relative accuracy of the FMR itself (a log difference), however small it is
          expect(Math.abs(got - exact)).toBeLessThan(1e-8 * Math.max(1, Math.abs(exact)));
        },
      ),
    );
  });

  it('stays accurate and finite far below 1e-20', () => {
    const n = 300;
    const p = 0.42;
    const exact = exactLogCdf(30, n, p);
    expect(exact / Math.LN10).toBeLessThan(-20);
    expect(logFmrAt(30 / n, { p, dof: n })).toBeCloseTo(exact, 8);
    expect(logFmrAt(0, { p, dof: n })).toBeCloseTo(n * Math.log1p(-p), 8);
    expect(fmrAt(0, { p, dof: n }) / (1 - p) ** n).toBeCloseTo(1, 8);
  });

  it('FMR is monotone in distance, 0 < FMR ≤ 1', () => {
    fc.assert(
      fc.property(
        modelArb,
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (model, a, b) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          const fLo = logFmrAt(lo, model);
          const fHi = logFmrAt(hi, model);
          expect(fLo).toBeLessThanOrEqual(fHi + 1e-12);
          expect(fHi).toBeLessThanOrEqual(0);
          expect(Number.isFinite(fLo)).toBe(true);
        },
      ),
    );
  });

  it('distanceForEvidence inverts evidenceAt', () => {
    fc.assert(
      fc.property(modelArb, fc.double({ min: 0.5, max: 25, noNaN: true }), (model, e) => {
        const d = distanceForEvidence(e, model);
        if (d === 0) {
          expect(evidenceAt(0, model)).toBeLessThanOrEqual(e);
          return;
        }
        expect(evidenceAt(d, model)).toBeGreaterThanOrEqual(e - 1e-9);
        expect(evidenceAt(d + 1e-6, model)).toBeLessThan(e + 1e-3);
      }),
    );
  });

  it('the default model sits in the measured FMR range at the deployed threshold', () => {
    const fmr = fmrAt(0.3375, DEFAULT_IMPOSTOR_MODEL);
    expect(fmr).toBeGreaterThan(2.4e-5);
    expect(fmr).toBeLessThan(6.2e-4);
  });
});

describe('evidence bar', () => {
  it.each([
    ['evidenceBar', evidenceBar],
    ['decisionBar', decisionBar],
  ])('%s grows with the gallery and falls as the target grows', (_name, bar) => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e9 }),
        fc.integer({ min: 1, max: 1e9 }),
        fc.double({ min: 1e-9, max: 0.5, noNaN: true }),
        fc.double({ min: 1e-9, max: 0.5, noNaN: true }),
        (n1, n2, t1, t2) => {
          const [nLo, nHi] = n1 <= n2 ? [n1, n2] : [n2, n1];
          const [tLo, tHi] = t1 <= t2 ? [t1, t2] : [t2, t1];
          expect(bar(nLo, t1)).toBeLessThanOrEqual(bar(nHi, t1) + 1e-12);
          expect(bar(n1, tHi)).toBeLessThanOrEqual(bar(n1, tLo) + 1e-12);
        },
      ),
    );
  });

  it('is log10(N / target) for small targets and keeps FPIR exactly at the target', () => {
    expect(evidenceBar(1e6, 1e-4)).toBeCloseTo(10, 4);
    expect(evidenceBar(1, 1e-4)).toBeCloseTo(4, 4);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e7 }),
        fc.double({ min: 1e-8, max: 0.3, noNaN: true }),
        (n, t) => {
          const fmr = 10 ** -evidenceBar(n, t);
          const fpir = -Math.expm1(n * Math.log1p(-fmr));
          expect(Math.abs(fpir - t) / t).toBeLessThan(1e-6);
        },
      ),
    );
  });

  it('rejects a target outside (0, 1)', () => {
    expect(() => evidenceBar(10, 0)).toThrow(RangeError);
    expect(() => evidenceBar(10, 1)).toThrow(RangeError);
    expect(() => evidenceBar(10, Number.NaN)).toThrow(RangeError);
    expect(() => decisionBar(10, 0)).toThrow(RangeError);
    expect(() => decisionBar(10, 1)).toThrow(RangeError);
  });
});

describe('decision bar (the target budgeted over the flow)', () => {
  it('is one decision point’s share of the search bar (monotone: "evidence bar" above)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e9 }),
        fc.double({ min: 1e-9, max: 0.5, noNaN: true }),
        (n1, t1) => {
          expect(decisionBar(n1, t1)).toBeCloseTo(evidenceBar(n1, t1 / DECISION_POINTS), 10);
          // stricter than a bar spending the whole target on one decision, by ≈ log10 2
          expect(decisionBar(n1, t1)).toBeGreaterThan(evidenceBar(n1, t1));
        },
      ),
    );
    expect(decisionBar(1e6, 1e-4) - evidenceBar(1e6, 1e-4)).toBeCloseTo(Math.log10(2), 4);
  });

  it('keeps the whole step-up flow of a stranger at or under the target (exact model, both hands)', () => {
    // A stranger's users: per-comparison evidence E ~ Exp(ln 10) in decades (FMR uniform), the other
    // hand independent. The flow matches when the first decision does, or when it asks for a step-up
    // and the fused decision (Fisher on the sum, same bar) matches. Bounded by the union bound:
    // N · P(E ≥ bar) + N · P(E1 + E2 ≥ fused sum at the bar), integrated on a grid here.
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 1e8 }),
        fc.double({ min: 1e-7, max: 1e-2, noNaN: true }),
        (n, target) => {
          const bar = decisionBar(n, target);
          let lo = bar;
          let hi = bar + 10;
          for (let i = 0; i < 60; i++) {
            const mid = (lo + hi) / 2;
            if (fusedEvidence(mid, 2) >= bar) hi = mid;
            else lo = mid;
          }
          const perUser1 = 10 ** -bar;
          // P(E1 + E2 ≥ s) = 10^−s (1 + s ln 10)
          const perUserFused = 10 ** -hi * (1 + hi * Math.LN10);
          const first = -Math.expm1(n * Math.log1p(-perUser1));
          const fused = -Math.expm1(n * Math.log1p(-perUserFused));
          expect(first).toBeLessThanOrEqual((target / DECISION_POINTS) * (1 + 1e-6));
          expect(fused).toBeLessThanOrEqual((target / DECISION_POINTS) * (1 + 1e-6));
          expect(first + fused).toBeLessThanOrEqual(target * (1 + 1e-6));
        },
      ),
    );
  });

  it('a stranger simulated through the decision is matched by the whole flow at most at the target', () => {
    // Monte Carlo of decideIdentification itself: N users with uniform FMR (evidence −log10 U), a
    // step-up to the other hand (independent) when asked, then the fused decision. Margin 0 and a
    // 1-decade window so that the bars, not the margin, decide; a loose target to count the rates.
    const n = 20;
    const target = 0.2;
    const flow = (targetFpir: number) => {
      let seed = 12345;
      const uniform = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return (seed + 0.5) / 2147483648;
      };
      const policy = { targetFpir, margin: 0, stepUpWindow: 1 };
      const trials = 40_000;
      let first = 0;
      let fused = 0;
      for (let t = 0; t < trials; t++) {
        const e1 = Array.from({ length: n }, () => -Math.log10(uniform()));
        const candidates = e1.map((evidence, i) => ({ userId: `u${i}`, evidence }));
        const d = decideIdentification({ gallery: n, candidates, canStepUp: true, policy });
        if (d.kind === 'match') first++;
        if (d.kind !== 'step_up') continue;
        const both = e1.map((e, i) => ({ userId: `u${i}`, evidence: e - Math.log10(uniform()) }));
        if (decideIdentification({ gallery: n, candidates: both, captures: 2, policy }).kind === 'match')
          fused++;
      }
      return { first: first / trials, flow: (first + fused) / trials };
    };
    const budgeted = flow(target);
    expect(budgeted.first).toBeLessThan(target / DECISION_POINTS); // ≈ 0.087
    expect(budgeted.flow).toBeGreaterThan(budgeted.first);
    expect(budgeted.flow).toBeLessThan(target); // ≈ 0.15
    // each decision spending the whole target (the rule before the budget): the flow exceeds it
    expect(flow(target * DECISION_POINTS).flow).toBeGreaterThan(1.3 * target); // ≈ 0.30
  });
});

describe('fused evidence (Fisher)', () => {
  it('is the sum for one capture and less than the sum for more', () => {
    expect(fusedEvidence(7, 1)).toBe(7);
    fc.assert(
      fc.property(fc.double({ min: 0.01, max: 40, noNaN: true }), (s) => {
        expect(fusedEvidence(s, 2)).toBeLessThan(s);
        expect(fusedEvidence(s, 2)).toBeGreaterThanOrEqual(0);
      }),
    );
  });

  it('is the exact tail of the sum of two uniform-FMR evidences', () => {
    // P(E1 + E2 ≥ s) for E ~ Exp(ln 10) in decades: 10^−s (1 + s ln 10)
    const s = 9;
    expect(fusedEvidence(s, 2)).toBeCloseTo(-Math.log10(10 ** -s * (1 + s * Math.LN10)), 10);
  });
});

const candidateArb = fc.array(
  fc.record({
    userId: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
    evidence: fc.double({ min: 0, max: 30, noNaN: true }),
  }),
  { maxLength: 8 },
);

describe('decideIdentification', () => {
  it('never matches below the bar or without the margin over the next different user', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e8 }),
        candidateArb,
        fc.boolean(),
        fc.double({ min: 1e-8, max: 0.1, noNaN: true }),
        (gallery, candidates, canStepUp, targetFpir) => {
          const d = decideIdentification({
            gallery,
            candidates,
            canStepUp,
            policy: { targetFpir },
          });
          expect(d.bar).toBeCloseTo(decisionBar(gallery, targetFpir), 12);
          if (d.kind !== 'match') return;
          expect(d.evidence).toBeGreaterThanOrEqual(d.bar);
          const mine = Math.max(...candidates.filter((c) => c.userId === d.userId).map((c) => c.evidence));
          expect(mine).toBe(d.evidence);
          for (const c of candidates) {
            if (c.userId !== d.userId) {
              expect(d.evidence - c.evidence).toBeGreaterThanOrEqual(DEFAULT_POLICY.margin);
              // nobody else would pass the bar on their own
              expect(c.evidence).toBeLessThan(d.bar);
            }
          }
        },
      ),
    );
  });

  it('steps up only when allowed, and only within the window', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e8 }), candidateArb, (gallery, candidates) => {
        const without = decideIdentification({ gallery, candidates, canStepUp: false });
        expect(without.kind).not.toBe('step_up');
        const d = decideIdentification({ gallery, candidates, canStepUp: true });
        if (d.kind === 'step_up') {
          expect(d.evidence).toBeGreaterThanOrEqual(d.bar - DEFAULT_POLICY.stepUpWindow);
          expect(without.kind).toBe('no_match');
        } else {
          expect(d).toEqual(without);
        }
      }),
    );
  });

  it('is independent of the candidates order', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e8 }), candidateArb, (gallery, candidates) => {
        const a = decideIdentification({ gallery, candidates });
        const b = decideIdentification({ gallery, candidates: [...candidates].reverse() });
        expect(b.kind).toBe(a.kind);
        if (a.kind !== 'no_match' && b.kind !== 'no_match') {
          expect(b.evidence).toBe(a.evidence);
        }
      }),
    );
  });

  it('a larger gallery never turns a refusal into a match', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e6 }),
        fc.integer({ min: 1, max: 1000 }),
        candidateArb,
        (gallery, factor, candidates) => {
          const small = decideIdentification({ gallery, candidates });
          const large = decideIdentification({ gallery: gallery * factor, candidates });
          if (small.kind !== 'match') expect(large.kind).not.toBe('match');
        },
      ),
    );
  });

  it('a stricter target never turns a refusal into a match', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1e8 }),
        fc.double({ min: 1e-9, max: 0.5, noNaN: true }),
        fc.double({ min: 1e-9, max: 0.5, noNaN: true }),
        candidateArb,
        fc.constantFrom(1, 2),
        (gallery, t1, t2, candidates, captures) => {
          const [tLo, tHi] = t1 <= t2 ? [t1, t2] : [t2, t1];
          const loose = decideIdentification({ gallery, candidates, captures, policy: { targetFpir: tHi } });
          const strict = decideIdentification({ gallery, candidates, captures, policy: { targetFpir: tLo } });
          if (loose.kind !== 'match') expect(strict.kind).not.toBe('match');
        },
      ),
    );
  });

  it('decides the three textbook cases', () => {
    const bar = decisionBar(1e6, DEFAULT_TARGET_FPIR);
    const cases: Array<[Candidate[], string]> = [
      [[], 'empty'],
      [
        [
          { userId: 'a', evidence: bar + 5 },
          { userId: 'b', evidence: 6 },
        ],
        'match',
      ],
      [
        [
          { userId: 'a', evidence: bar + 5 },
          { userId: 'b', evidence: bar + 4 },
        ],
        'ambiguous',
      ],
      [
        [
          { userId: 'a', evidence: bar - 1 },
          { userId: 'b', evidence: 5 },
        ],
        'below_bar',
      ],
      [[{ userId: 'a', evidence: 6 }], 'below_bar'],
      // both far above the bar: chance explains neither, the margin does not pick one
      [
        [
          { userId: 'a', evidence: bar + 30 },
          { userId: 'b', evidence: bar + 1 },
        ],
        'ambiguous',
      ],
      // both just below it, too close to tell apart
      [
        [
          { userId: 'a', evidence: bar - 0.5 },
          { userId: 'b', evidence: bar - 1 },
        ],
        'ambiguous',
      ],
    ];
    for (const [candidates, expected] of cases) {
      const d = decideIdentification({ gallery: 1e6, candidates });
      expect(d.kind === 'no_match' ? d.reason : d.kind).toBe(expected);
    }
    const plausible = decideIdentification({
      gallery: 1e6,
      candidates: [{ userId: 'a', evidence: bar - 1 }],
      canStepUp: true,
    });
    expect(plausible.kind).toBe('step_up');
  });

  it('lowers fused evidence by log10 of the template pairs per user, and never for one capture', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 40, noNaN: true }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 1e8 }),
        (sum, pairs, gallery) => {
          const fused = decideIdentification({
            gallery,
            candidates: [{ userId: 'a', evidence: sum, pairs }],
            captures: 2,
          });
          const plain = decideIdentification({
            gallery,
            candidates: [{ userId: 'a', evidence: sum }],
            captures: 2,
          });
          if (fused.kind !== 'no_match' && plain.kind !== 'no_match')
            expect(fused.evidence).toBeCloseTo(Math.max(0, plain.evidence - Math.log10(pairs)), 9);
          // more template pairs never turn a refusal into a match
          if (plain.kind !== 'match') expect(fused.kind).not.toBe('match');
          const one = decideIdentification({ gallery, candidates: [{ userId: 'a', evidence: sum, pairs }] });
          const onePlain = decideIdentification({ gallery, candidates: [{ userId: 'a', evidence: sum }] });
          expect(one).toEqual(onePlain);
        },
      ),
    );
  });

  it('keeps the fused decision at its share with k templates per hand (exact model, union over users)', () => {
    // a user with k templates a hand: best of k per hand, so P(sum ≥ s) ≤ k² P(E1 + E2 ≥ s); a gallery
    // of N templates a hand holds N / k users. The decision needs fused − log10 k ≥ bar.
    for (const k of [1, 3, 5]) {
      for (const n of [1e3, 1e6]) {
        const bar = decisionBar(n, DEFAULT_TARGET_FPIR);
        let lo = bar;
        let hi = bar + 12;
        for (let i = 0; i < 80; i++) {
          const mid = (lo + hi) / 2;
          if (fusedEvidence(mid, 2) - Math.log10(k) >= bar) hi = mid;
          else lo = mid;
        }
        const perUser = k * k * 10 ** -hi * (1 + hi * Math.LN10);
        const fpir = -Math.expm1((n / k) * Math.log1p(-perUser));
        expect(fpir).toBeLessThanOrEqual((DEFAULT_TARGET_FPIR / DECISION_POINTS) * (1 + 1e-6));
      }
    }
  });

  it('fuses two captures with the Fisher correction', () => {
    const bar = decisionBar(1e6, DEFAULT_TARGET_FPIR);
    // Exactly the bar in sum is not enough for two captures
    const d = decideIdentification({
      gallery: 1e6,
      candidates: [{ userId: 'a', evidence: bar }],
      captures: 2,
    });
    expect(d.kind).toBe('no_match');
    const e = decideIdentification({
      gallery: 1e6,
      candidates: [{ userId: 'a', evidence: bar + 3 }],
      captures: 2,
    });
    expect(e.kind).toBe('match');
  });
});
