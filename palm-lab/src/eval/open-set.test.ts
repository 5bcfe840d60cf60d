import { seededRandom } from '@palmid/firmware-sim/rng';
import {
  DECISION_POINTS,
  DEFAULT_POLICY,
  decisionBar,
  distanceForEvidence,
  fusedEvidence,
  IMPOSTOR_MODELS,
  type ImpostorModel,
} from '@palmid/palm/decision';
import { fitImpostorModel } from '@palmid/palm/impostor-fit';
import { CODE_PLANES, encodeTemplate, GRID, SIGNATURE_WORDS } from '@palmid/palm/template';
import { describe, expect, it } from 'vitest';
import type { Dataset } from './dataset.ts';
import { evaluate, personOf } from './evaluate.ts';
import { type OpenSetPalm, openSet } from './open-set.ts';

const MODEL: ImpostorModel = DEFAULT_POLICY.model;

/** `persons` people with both hands, `per` images per hand: image ids in capture order. */
function palmsOf(persons: number, per: number): OpenSetPalm[] {
  const palms: OpenSetPalm[] = [];
  let id = 0;
  for (let p = 0; p < persons; p++)
    for (let hand = 0; hand < 2; hand++)
      palms.push({ person: `p${p}`, images: Array.from({ length: per }, () => id++) });
  return palms;
}

function palmOfImage(palms: OpenSetPalm[]): Map<number, number> {
  const m = new Map<number, number>();
  palms.forEach((p, i) => {
    for (const im of p.images) m.set(im, i);
  });
  return m;
}

/** Stranger terms of the flow under an exactly exponential evidence tail (truth = deployed model). */
function stepUpBound(n: number, target: number): number {
  const { stepUpWindow: w } = DEFAULT_POLICY;
  const b = decisionBar(n, target);
  let lo = b;
  let hi = b + 10;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (fusedEvidence(mid, 2) >= b) hi = mid;
    else lo = mid;
  }
  const sb = hi;
  const first = -Math.expm1(n * Math.log1p(-(10 ** -b)));
  const stepUp = -Math.expm1(n * Math.log1p(-(10 ** -(b - w)))) - first;
  return first + n * 10 ** -sb * w * Math.LN10 + stepUp * n * 10 ** -sb * (b - w) * Math.LN10;
}

describe('open-set identification (palm eval open_set)', () => {
  it('reports FNIR over re-captured presentations apart (images merged in from another label)', () => {
    const palms = palmsOf(10, 4).map((p, i) =>
      i === 0 ? { ...p, recaptured: new Set(p.images.slice(2)) } : p,
    );
    const of = palmOfImage(palms);
    const recaptured = palms[0]!.recaptured!;
    const r = openSet(
      {
        palms,
        // genuine pairs identical, except that palm 0's re-captures resemble nothing (no evidence)
        distance: (a, b) => (of.get(a) === of.get(b) && !recaptured.has(a) ? 0 : 0.5),
        impostor: new Float64Array(1000).fill(0.5),
        truth: MODEL,
      },
      { random: seededRandom(2), draws: 4 },
    );
    expect(r.presentations).toBe(60); // 20 palms × 3 probes
    expect(r.recaptured_presentations).toBe(2);
    for (const row of r.rows) {
      // the other hand (person p0's right palm matches) cannot rescue a re-capture without a step-up
      expect(row.fnir_recaptures).toBe(1);
      expect(row.fnir).toBeCloseTo(2 / 60, 4); // rounded to 4 significant digits
    }
    const plain = openSet(
      {
        palms: palmsOf(10, 4),
        distance: (a, b) => (of.get(a) === of.get(b) ? 0 : 0.5),
        impostor: new Float64Array(1000).fill(0.5),
        truth: MODEL,
      },
      { random: seededRandom(2), draws: 4 },
    );
    expect(plain.recaptured_presentations).toBe(0);
    for (const row of plain.rows) expect(row.fnir_recaptures).toBeNull();
  });

  it('keeps the whole flow’s FPIR under the target when the deployed model is the truth, and finds every strong genuine', () => {
    const palms = palmsOf(20, 3);
    const of = palmOfImage(palms);
    const r = openSet(
      {
        palms,
        // genuine pairs identical, impostor pairs at the bulk of the model: no evidence
        distance: (a, b) => (of.get(a) === of.get(b) ? 0 : 0.5),
        impostor: new Float64Array(1000).fill(0.5),
        truth: MODEL,
      },
      { random: seededRandom(1), draws: 8 },
    );
    expect(r.rows.map((x) => x.gallery)).toEqual([1e3, 1e4, 1e5, 1e6]);
    expect(r.presentations).toBe(80); // 40 palms × 2 probes
    expect(r.second_capture).toBe('other hand');
    for (const row of r.rows) {
      expect(row.threshold).toBeCloseTo(decisionBar(row.gallery, 1e-4), 4);
      expect(row.distance).toBeCloseTo(distanceForEvidence(row.threshold, MODEL), 4);
      expect(row.fpir_method).toBe('extrapolated');
      // the first decision point spends its share of the target
      expect(row.fpir).toBeGreaterThan(0.97e-4 / DECISION_POINTS);
      expect(row.fpir).toBeLessThan(1.03e-4 / DECISION_POINTS);
      // the flow's strangers: the first capture plus those a step-up lets through (closed form),
      // together under the target
      expect(row.fpir_step_up / stepUpBound(row.gallery, 1e-4)).toBeGreaterThan(0.9);
      expect(row.fpir_step_up / stepUpBound(row.gallery, 1e-4)).toBeLessThan(1.1);
      expect(row.fpir_step_up).toBeGreaterThan(row.fpir);
      expect(row.fpir_step_up).toBeLessThanOrEqual(1e-4);
      expect(row.fnir).toBe(0);
      expect(row.fnir_step_up).toBe(0);
      expect(row.step_up_rate).toBe(0);
      expect(row.enrolled_as_another).toBeLessThan(1e-12);
    }
    // the bar rises a decade per tenfold gallery
    expect(r.rows[3]!.threshold - r.rows[0]!.threshold).toBeCloseTo(3, 3);
  });

  it('keeps the whole flow under the target with several templates per palm', () => {
    const palms = palmsOf(10, 7);
    const of = palmOfImage(palms);
    for (const enrol of [3, 5]) {
      const r = openSet(
        {
          palms,
          distance: (a, b) => (of.get(a) === of.get(b) ? 0 : 0.5),
          impostor: new Float64Array(1000).fill(0.5),
          truth: MODEL,
        },
        { random: seededRandom(4), draws: 2, enrol, galleries: [1e3, 1e6] },
      );
      for (const row of r.rows) {
        expect(row.fpir).toBeLessThan(1.03e-4 / DECISION_POINTS);
        // 0.62–0.66 × target: without the template-pair correction 0.89–1.0 × (three) and above (five)
        expect(row.fpir_step_up).toBeLessThan(0.75e-4);
      }
    }
  });

  it('misses every weak genuine, and asks for a step-up as often as strangers come near the bar', () => {
    const palms = palmsOf(10, 4);
    const of = palmOfImage(palms);
    const r = openSet(
      {
        palms,
        distance: (a, b) => (of.get(a) === of.get(b) ? 0.45 : 0.5),
        impostor: new Float64Array(1000).fill(0.5),
        truth: MODEL,
      },
      { random: seededRandom(2), draws: 200, galleries: [1e6] },
    );
    const row = r.rows[0]!;
    expect(row.fnir).toBe(1);
    expect(row.fnir_step_up).toBe(1);
    // P(the strongest of ~1e6 strangers lands within the window below the bar, at target / 2): ≈ 4.9 %
    expect(row.stranger_step_up_rate).toBeGreaterThan(0.04);
    expect(row.stranger_step_up_rate).toBeLessThan(0.055);
    expect(Math.abs(row.step_up_rate - row.stranger_step_up_rate)).toBeLessThan(0.02);
  });

  it('reads FPIR from the impostor pairs where they resolve the bar, else from the tail model', () => {
    const palms = palmsOf(5, 2);
    const of = palmOfImage(palms);
    const bar3 = distanceForEvidence(decisionBar(1e3, 1e-2), MODEL);
    // 20 of 100 000 impostor pairs at or below the N = 1e3 bar (target 1e-2): FMR 2e-4
    const impostor = new Float64Array(100_000).fill(0.5);
    impostor.fill(bar3 - 0.001, 0, 20);
    const r = openSet(
      { palms, distance: (a, b) => (of.get(a) === of.get(b) ? 0 : 0.5), impostor, truth: MODEL },
      { random: seededRandom(3), draws: 4, galleries: [1e3, 1e6], policy: { targetFpir: 1e-2 } },
    );
    expect(r.rows[0]!.fpir_method).toBe('measured');
    expect(r.rows[0]!.fpir).toBeCloseTo(1 - (1 - 2e-4) ** 1e3, 4);
    expect(r.rows[1]!.fpir_method).toBe('extrapolated');
    expect(r.rows[1]!.fpir).toBeCloseTo(1e-2 / DECISION_POINTS, 4);
  });

  it('counts an enrolled person matched to another user, and the second presentation when the set has one hand', () => {
    // one person per palm (no hands): palm 0's probes sit right on palm 1's template
    const palms: OpenSetPalm[] = Array.from({ length: 6 }, (_, p) => ({
      person: `p${p}`,
      images: [p * 3, p * 3 + 1, p * 3 + 2],
    }));
    const palmOf = (im: number) => Math.floor(im / 3);
    const r = openSet(
      {
        palms,
        distance: (a, b) => {
          if (palmOf(a) === 0 && palmOf(b) === 1) return 0.05;
          return palmOf(a) === palmOf(b) ? (palmOf(a) === 0 ? 0.45 : 0.02) : 0.5;
        },
        impostor: new Float64Array(1000).fill(0.5),
        truth: MODEL,
      },
      { random: seededRandom(4), draws: 4, galleries: [1e3] },
    );
    expect(r.second_capture).toBe('second presentation of the same hand');
    expect(r.presentations).toBe(12);
    // 2 of 12 presentations (palm 0's) go to palm 1's user
    expect(r.rows[0]!.enrolled_as_another).toBeCloseTo(2 / 12, 3);
    expect(r.rows[0]!.fnir).toBeCloseTo(2 / 12, 3);
  });
});

describe('impostor model fit', () => {
  it('recovers a binomial impostor distribution from its moments and its tail', () => {
    const random = seededRandom(5);
    const dof = 300;
    const p = 0.45;
    const d = new Float64Array(200_000);
    for (let i = 0; i < d.length; i++) {
      let k = 0;
      for (let j = 0; j < dof; j++) if (random() < p) k++;
      d[i] = k / dof;
    }
    const fit = fitImpostorModel(d);
    expect(fit.moments.p).toBeCloseTo(p, 2);
    expect(fit.moments.dof / dof).toBeGreaterThan(0.95);
    expect(fit.moments.dof / dof).toBeLessThan(1.05);
    expect(fit.tail_rms_decades.tail).toBeLessThan(0.1);
    expect(fit.tail_rms_decades.moments).toBeLessThan(0.15);
    // the check covers the tail down to what 200 000 pairs resolve (≥ 10 pairs: FMR 5e-5)
    expect(Math.min(...fit.check.map((c) => c.fmr_measured))).toBeLessThan(2e-4);
  });

  it('says when the bulk misleads about the tail: a heavy tail mixed into a narrow bulk', () => {
    const random = seededRandom(6);
    const d = new Float64Array(100_000);
    for (let i = 0; i < d.length; i++) d[i] = 0.45 + (random() - 0.5) * 0.04;
    for (let i = 0; i < 300; i++) d[i] = 0.25 + random() * 0.15;
    const fit = fitImpostorModel(d);
    expect(fit.tail_rms_decades.moments).toBeGreaterThan(1);
    expect(fit.tail_rms_decades.tail).toBeLessThan(fit.tail_rms_decades.moments / 3);
  });
});

describe('palm eval open_set through evaluate()', () => {
  /** A template whose first code word carries the image id; the distance reads it back. */
  function template(id: number): Uint8Array {
    const code = new Uint32Array(CODE_PLANES * GRID);
    code[0] = id;
    return encodeTemplate({
      version: 1,
      hand: 'right',
      quality: 90,
      liveness: 90,
      code,
      mask: new Uint32Array(GRID).fill(0xffffffff),
      signature: new Uint32Array(SIGNATURE_WORDS),
    });
  }

  it('reports open_set rows, the fitted model and the protocol, people counted once over both hands', async () => {
    const subjects: Dataset['subjects'] = [];
    for (let p = 0; p < 8; p++)
      for (const hand of ['l', 'r'])
        subjects.push({ name: `${p}/${hand}`, files: [0, 1, 2].map((i) => `${p}-${hand}-${i}`) });
    const files = subjects.flatMap((s) => s.files);
    const subjectOfImage = files.map((f) => f.split('-').slice(0, 2).join('-'));
    const random = seededRandom(7);
    const jitter = files.map(() => files.map(() => random()));
    const distance = (a: Uint32Array, ao: number, b: Uint32Array, bo: number) => {
      const i = a[ao + 1]!;
      const j = b[bo + 1]!;
      const [x, y] = i < j ? [i, j] : [j, i];
      return subjectOfImage[x] === subjectOfImage[y] ? 0.05 : 0.42 + 0.06 * jitter[x]![y]!;
    };
    const { report } = await evaluate(
      { subjects },
      async (file) => ({ template: template(files.indexOf(file)) }),
      {
        distance,
        openSet: { draws: 4 },
      },
    );
    expect(personOf('0051/l')).toBe('0051');
    expect(personOf('055')).toBe('055');
    expect(report.open_set?.map((r) => r.gallery)).toEqual([1e3, 1e4, 1e5, 1e6]);
    expect(report.open_set_protocol).toMatchObject({
      presentations: 32,
      second_capture: 'other hand',
      target_fpir: 1e-4,
    });
    expect(report.impostor_model?.impostor_pairs).toBe(report.impostor_pairs);
    for (const row of report.open_set!) {
      expect(row.fnir).toBe(0);
      expect(['measured', 'extrapolated']).toContain(row.fpir_method);
      expect(row.fpir).toBeGreaterThanOrEqual(0);
      expect(row.fpir).toBeLessThanOrEqual(1);
    }
    // the set's tail is lighter than any shipped model: evidence is read with the shipped one, the
    // `wide` coding's by default and the coding's given (`palm eval` passes the --sensor's)
    expect(report.open_set_protocol).toMatchObject({ model_source: 'shipped', model: IMPOSTOR_MODELS.wide });
    const fine = await evaluate({ subjects }, async (file) => ({ template: template(files.indexOf(file)) }), {
      distance,
      openSet: { draws: 4, shipped: IMPOSTOR_MODELS.fine },
    });
    expect(fine.report.open_set_protocol).toMatchObject({
      model_source: 'shipped',
      model: IMPOSTOR_MODELS.fine,
    });
  });
});
