import { describe, expect, it } from 'vitest';
import { mosaic, randomTemplate } from '../../../../test/support/templates.ts';
import { DEFAULT_IMPOSTOR_MODEL, decisionBar, distanceForEvidence, evidenceAt } from '../decision.ts';
import { compareTemplates } from '../match.ts';
import { decodeTemplate, encodeTemplate } from '../template.ts';
import { calibrateGallery, heavierAt, isCalibratable, seededUniform } from './calibrate.ts';
import { MemoryGallery } from './gallery.ts';
import { identifyProbes } from './identify.ts';

/**
 * Gallery calibration: the decision's impostor model is checked against the gallery's own
 * different-user pairs, and replaced only by a stricter one.
 */
const random = (n: number) =>
  Array.from({ length: n }, () => new Uint8Array(Buffer.from(randomTemplate(), 'base64')));

function galleryOf(templates: Uint8Array[]): MemoryGallery {
  const g = new MemoryGallery();
  templates.forEach((template, i) => {
    g.add({ palmId: `p${i}`, userId: `u${i}`, hand: 'right', template });
  });
  return g;
}

/** Distances drawn from Binomial(dof, p) / dof: an impostor population of a known model. */
function binomialPairs(model: { p: number; dof: number }) {
  return (pairs: number, rnd: () => number): Float64Array => {
    const out = new Float64Array(pairs);
    for (let i = 0; i < pairs; i++) {
      let k = 0;
      for (let j = 0; j < model.dof; j++) if (rnd() < model.p) k++;
      out[i] = k / model.dof;
    }
    return out;
  };
}

/** `t` with each code bit flipped with probability `q` (seeded): a palm at distance ≈ q from `t`. */
function flipped(t: Uint8Array, q: number, seed: number): Uint8Array {
  const d = decodeTemplate(t);
  const next = seededUniform(seed);
  const code = d.code.map((w) => {
    let m = 0;
    for (let b = 0; b < 32; b++) if (next() < q) m |= 1 << b;
    return (w ^ m) >>> 0;
  });
  return encodeTemplate({ ...d, code });
}

// palms that resemble each other far more than real strangers do: every tile from one of two palms
const bases = random(6);
const lookAlikes = Array.from({ length: 60 }, (_, i) => mosaic(bases, i));

describe('gallery calibration', () => {
  it('keeps the shipped model while the gallery is too small to describe strangers', async () => {
    const g = galleryOf(random(30));
    expect(isCalibratable(g)).toBe(true);
    const c = await calibrateGallery(g);
    expect(c).toMatchObject({ users: 30, pairs: 0, fit: null, source: 'shipped', reason: 'too_few_users' });
    expect(g.rule.policy.model).toEqual(DEFAULT_IMPOSTOR_MODEL);
  });

  it('keeps the shipped model when the gallery’s palms are easier to tell apart than it says', async () => {
    const g = galleryOf(random(40));
    const c = await calibrateGallery(g, { minUsers: 20, pairs: 20_000 });
    expect(c.reason).toBe('fit_lighter');
    expect(c.fit).not.toBeNull();
    expect(c.pairs).toBe(20_000);
    expect(g.rule.policy.model).toEqual(DEFAULT_IMPOSTOR_MODEL);
  });

  it('switches to the gallery’s fit when its strangers resemble each other more, and a borderline stranger is then refused', async () => {
    const g = galleryOf(random(50));
    const [target] = random(1);
    g.add({ palmId: 'pt', userId: 'target', hand: 'right', template: target! });
    // a stranger 0.29 from the target: under the shipped model chance explains that only rarely in
    // a gallery of this size (evidence above the bar)
    const stranger = flipped(target!, 0.29, 7);
    const d = (1 - compareTemplates(stranger, target!)) / 2;
    const bar = decisionBar(51, g.rule.policy.targetFpir);
    expect(evidenceAt(d, DEFAULT_IMPOSTOR_MODEL)).toBeGreaterThan(bar);
    expect(identifyProbes(g, [{ template: stranger }]).decision).toMatchObject({
      kind: 'match',
      userId: 'target',
    });
    // this site's palms resemble each other more than the development sets' (its pairs drawn from a
    // wider binomial than the shipped model: the sampling itself is the test below)
    g.impostorDistances = binomialPairs({ p: 0.45, dof: 150 });
    let pauses = 0;
    const c = await calibrateGallery(g, {
      minUsers: 20,
      pairs: 20_000,
      pause: async () => {
        pauses++;
      },
    });
    expect(c).toMatchObject({ source: 'gallery', reason: 'fit_heavier', pairs: 20_000, users: 51 });
    expect(c.fit!.p).toBeCloseTo(0.45, 1);
    expect(pauses).toBeGreaterThan(0); // the sample is drawn in chunks, yielding between them
    expect(g.rule.policy.model).toEqual(c.fit);
    // the bar now lies at a smaller distance, and the stranger no longer matches; the genuine palm does
    expect(distanceForEvidence(bar, c.fit!)).toBeLessThan(distanceForEvidence(bar, DEFAULT_IMPOSTOR_MODEL));
    expect(identifyProbes(g, [{ template: stranger }]).decision.kind).not.toBe('match');
    expect(identifyProbes(g, [{ template: target! }]).decision).toMatchObject({
      kind: 'match',
      userId: 'target',
    });
    expect(identifyProbes(g, [{ template: flipped(target!, 0.15, 8) }]).decision).toMatchObject({
      kind: 'match',
      userId: 'target',
    });
    // a later calibration that finds the shipped model stricter goes back to it
    g.impostorDistances = binomialPairs({ p: 0.45, dof: 2000 });
    const again = await calibrateGallery(g, { minUsers: 20, pairs: 20_000 });
    expect(again.reason).toBe('fit_lighter');
    expect(g.rule.policy.model).toEqual(DEFAULT_IMPOSTOR_MODEL);
  });

  it('keeps the shipped model, and says so, when the gallery’s palms share structure no palm population has', async () => {
    // one palm's tiles under many users: pairs far closer than strangers' (a fit of dof ≈ 30)
    const g = galleryOf(lookAlikes.slice(0, 50));
    const c = await calibrateGallery(g, { minUsers: 20, pairs: 20_000 });
    expect(c.reason).toBe('fit_implausible');
    expect(c.fit!.dof).toBeLessThan(100);
    expect(c.source).toBe('shipped');
    expect(g.rule.policy.model).toEqual(DEFAULT_IMPOSTOR_MODEL);
  });

  it('draws the same sample and fit from the same gallery, and compares palms of one hand of two users only', async () => {
    const g = galleryOf(lookAlikes.slice(0, 30));
    const a = await calibrateGallery(g, { minUsers: 10, pairs: 5_000 });
    const b = await calibrateGallery(g, { minUsers: 10, pairs: 5_000 });
    expect(b.fit).toEqual(a.fit);
    // one user with two palms of each hand: no pair qualifies
    const one = new MemoryGallery();
    const [l1, l2, r1, r2] = random(4);
    one.add({ palmId: 'a', userId: 'u', hand: 'left', template: l1! });
    one.add({ palmId: 'b', userId: 'u', hand: 'left', template: l2! });
    one.add({ palmId: 'c', userId: 'u', hand: 'right', template: r1! });
    one.add({ palmId: 'd', userId: 'v', hand: 'left', template: r2! });
    const d = one.impostorDistances(1_000, seededUniform(1));
    // only u's two left palms against v's left palm qualify
    expect(d.length).toBe(1_000);
    const dist = (x: Uint8Array, y: Uint8Array) => (1 - compareTemplates(x, y)) / 2;
    const allowed = [dist(l1!, r2!), dist(r2!, l1!), dist(l2!, r2!), dist(r2!, l2!)];
    for (const x of new Set(d)) expect(allowed.some((a) => Math.abs(a - x) < 1e-9)).toBe(true);
  });

  it('calls a model heavier only where it gives a stranger more chance at a bar', () => {
    const shipped = DEFAULT_IMPOSTOR_MODEL;
    expect(heavierAt(shipped, shipped, [1e3, 1e6], 1e-4)).toBe(false);
    expect(heavierAt({ p: shipped.p, dof: shipped.dof / 2 }, shipped, [1e6], 1e-4)).toBe(true);
    expect(heavierAt({ p: shipped.p, dof: shipped.dof * 2 }, shipped, [1e3, 1e6], 1e-4)).toBe(false);
  });
});
