import { renderRoi } from '@palmid/firmware-sim/synth/roi';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { mosaic } from '../../../../test/support/templates.ts';
import { extractRoiTemplate } from '../capture/roi-template.ts';
import { decisionBar, evidenceAt } from '../decision.ts';
import { decodeTemplate, encodeTemplate, type TemplateHand } from '../template.ts';
import { createExhaustiveGallery } from './exhaustive.ts';
import { MemoryGallery } from './gallery.ts';
import { duplicateBar, identificationRule, identifyProbes } from './identify.ts';
import { TopUsers } from './top-users.ts';

/**
 * The gallery-wide decision (CONTRACT §10) on real synthetic palms: the matcher's raw distances go
 * through the shared decision with the number of palms searched.
 */
const withHand = (t: Uint8Array, hand: TemplateHand) => encodeTemplate({ ...decodeTemplate(t), hand });
const roi = (identity: string, session: 1 | 2, sample = 0) =>
  extractRoiTemplate(renderRoi({ identity, style: 'contact', session, sample }));

const T: Record<string, Uint8Array> = {};
const fillers: Uint8Array[] = [];

beforeAll(async () => {
  for (const id of ['a', 'b', 'c', 'stranger'])
    for (const session of [1, 2] as const) T[`${id}${session}`] = withHand(await roi(id, session), 'right');
  T.a1bis = withHand(await roi('a', 1, 1), 'right');
  // a's left hand: another synthetic palm, marked left
  T.aLeft1 = withHand(await roi('a-left', 1), 'left');
  T.aLeft2 = withHand(await roi('a-left', 2), 'left');
  T.strangerLeft = withHand(await roi('stranger-left', 2), 'left');
  const strangers: Uint8Array[] = [];
  for (let i = 0; i < 6; i++) strangers.push(await roi(`x${i}`, 1));
  for (let i = 0; i < 2000; i++) fillers.push(withHand(mosaic(strangers, i), 'right'));
}, 60_000);

function bigGallery(): MemoryGallery {
  const g = new MemoryGallery({ capacity: 4096 });
  fillers.forEach((t, i) => {
    g.add({ palmId: `f${i}`, userId: `filler${i}`, hand: 'right', template: t });
  });
  g.add({ palmId: 'pa', userId: 'ua', hand: 'right', template: T.a1! });
  g.add({ palmId: 'pb', userId: 'ub', hand: 'right', template: T.b1! });
  return g;
}

describe('gallery-wide identification', () => {
  it('identifies a genuine probe and refuses a stranger in a gallery of 2 002 palms', () => {
    const g = bigGallery();
    const genuine = identifyProbes(g, [{ template: T.a2! }]);
    expect(genuine.searched).toBe(2002);
    expect(genuine.decision).toMatchObject({ kind: 'match', userId: 'ua' });
    expect(genuine.decision.bar).toBeCloseTo(decisionBar(2002, g.rule.policy.targetFpir), 10);
    expect(g.identify(T.a2!)?.userId).toBe('ua');
    expect(g.identify(T.b2!)?.userId).toBe('ub');

    const stranger = identifyProbes(g, [{ template: T.stranger2! }], { canStepUp: true });
    expect(stranger.decision).toMatchObject({ kind: 'no_match', reason: 'below_bar' });
    expect(g.identify(T.stranger2!)).toBeNull();
    // the stranger's closest palm is far below the bar: its evidence is what chance gives
    const closest = g.search(T.stranger2!).candidates[0]!;
    expect(evidenceAt(closest.distance)).toBeLessThan(genuine.decision.bar - g.rule.policy.stepUpWindow);
  });

  it('the exhaustive reference decides the same', () => {
    const ex = createExhaustiveGallery();
    fillers.slice(0, 300).forEach((t, i) => {
      ex.add({ palmId: `f${i}`, userId: `filler${i}`, hand: 'right', template: t });
    });
    ex.add({ palmId: 'pa', userId: 'ua', hand: 'right', template: T.a1! });
    expect(ex.identify(T.a2!)?.userId).toBe('ua');
    expect(ex.identify(T.stranger2!)).toBeNull();
  });

  it('refuses two users with the same palm as ambiguous, naming neither', () => {
    const g = bigGallery();
    // a second account holding another capture of a's palm (what the duplicate check prevents)
    g.add({ palmId: 'pa-twin', userId: 'twin', hand: 'right', template: T.a1bis! });
    const out = identifyProbes(g, [{ template: T.a2! }]);
    expect(out.decision).toMatchObject({ kind: 'no_match', reason: 'ambiguous' });
    expect(out.hit).toBeNull();
    expect(g.identify(T.a2!)).toBeNull();
    // neither has the other hand: a step-up could not help, so none is offered
    expect(identifyProbes(g, [{ template: T.a2! }], { canStepUp: true }).decision.kind).toBe('no_match');
  });

  it('a larger gallery raises the bar: a match can become a step-up, and the other hand completes it', () => {
    const g = new MemoryGallery();
    g.add({ palmId: 'pa', userId: 'ua', hand: 'right', template: T.a1! });
    g.add({ palmId: 'pa-left', userId: 'ua', hand: 'left', template: T.aLeft1! });
    g.add({ palmId: 'pb', userId: 'ub', hand: 'right', template: T.b1! });
    const e = evidenceAt(g.search(T.a2!).candidates[0]!.distance);
    expect(identifyProbes(g, [{ template: T.a2! }]).decision.kind).toBe('match');
    // the same probe where the bar sits 1.5 decades above its evidence (a gallery ~10^(e−2.5) palms)
    const rule = identificationRule({ policy: { targetFpir: 2 * 10 ** -(e + 1.5) } });
    const one = identifyProbes(g, [{ template: T.a2! }], { canStepUp: true, rule });
    expect(one.decision).toMatchObject({ kind: 'step_up', userId: 'ua' });
    expect(one.stepUpHand).toBe('left');
    // without a device that can present more, it is refused
    expect(identifyProbes(g, [{ template: T.a2! }], { rule }).decision).toMatchObject({
      kind: 'no_match',
      reason: 'below_bar',
    });
    // the other hand: independent evidence, fused
    const both = identifyProbes(g, [{ template: T.a2! }, { template: T.aLeft2! }], { rule });
    expect(both.fused).toBe(true);
    expect(both.decision).toMatchObject({ kind: 'match', userId: 'ua' });
    expect(both.hit?.palmId).toBe('pa');
    // a stranger's left hand adds nothing: still below the bar
    const faked = identifyProbes(g, [{ template: T.a2! }, { template: T.strangerLeft! }], { rule });
    expect(faked.decision.kind).toBe('no_match');
    // the same hand again is not independent evidence: counted once
    const again = identifyProbes(g, [{ template: T.a2! }, { template: T.a1bis! }], { rule });
    expect(again.fused).toBe(false);
    expect(again.decision.kind).toBe('no_match');
  });

  it('fuses two hands per user as the best of its template pairs: three templates a hand cost log10 3', () => {
    const fused = (extra: number) => {
      const g = new MemoryGallery();
      g.add({ palmId: 'pa', userId: 'ua', hand: 'right', template: T.a1! });
      g.add({ palmId: 'pa-left', userId: 'ua', hand: 'left', template: T.aLeft1! });
      g.add({ palmId: 'pb', userId: 'ub', hand: 'right', template: T.b1! });
      // further templates of ua's palms that do not come closer to the probes (the other session)
      for (let i = 0; i < extra; i++) {
        g.add({ palmId: `pa${i}`, userId: 'ua', hand: 'right', template: T.b2! });
        g.add({ palmId: `pa-left${i}`, userId: 'ua', hand: 'left', template: T.strangerLeft! });
      }
      const d = identifyProbes(g, [{ template: T.a2! }, { template: T.aLeft2! }]).decision;
      expect(d.kind).not.toBe('no_match');
      return d.kind === 'no_match' ? 0 : d.evidence;
    };
    expect(fused(0) - fused(2)).toBeCloseTo(Math.log10(3), 6);
  });

  it('a step-up reuses its first capture’s search: the same decision, and a user removed since does not count', () => {
    const g = new MemoryGallery();
    g.add({ palmId: 'pa', userId: 'ua', hand: 'right', template: T.a1! });
    g.add({ palmId: 'pa-left', userId: 'ua', hand: 'left', template: T.aLeft1! });
    g.add({ palmId: 'pb', userId: 'ub', hand: 'right', template: T.b1! });
    const e = evidenceAt(g.search(T.a2!).candidates[0]!.distance);
    const rule = identificationRule({ policy: { targetFpir: 2 * 10 ** -(e + 1.5) } });
    const first = identifyProbes(g, [{ template: T.a2! }], { canStepUp: true, rule });
    expect(first.decision.kind).toBe('step_up');
    expect(first.searches).toHaveLength(1);
    const kept = { template: T.a2!, search: first.searches[0] };
    const fresh = identifyProbes(g, [{ template: T.aLeft2! }, { template: T.a2! }], { rule });
    const reused = identifyProbes(g, [{ template: T.aLeft2! }, kept], { rule });
    expect(reused.decision).toEqual(fresh.decision);
    expect(reused.decision).toMatchObject({ kind: 'match', userId: 'ua' });
    expect(reused.searches[1]).toBe(first.searches[0]); // not searched again
    // the person erased between the two captures: the kept search names them, the gallery no longer does
    g.removeUser('ua');
    expect(identifyProbes(g, [{ template: T.aLeft2! }, kept], { rule }).decision.kind).toBe('no_match');
  });

  it('a raised PALMID_MATCH_THRESHOLD floor refuses what the gallery-wide bar accepts', () => {
    const g = new MemoryGallery({ threshold: 0.95 });
    g.add({ palmId: 'pa', userId: 'ua', hand: 'right', template: T.a1! });
    expect(identifyProbes(g, [{ template: T.a2! }]).decision.kind).toBe('no_match');
    // the duplicate check ignores the floor: one palm, one account
    expect(g.findDuplicate(T.a2!)?.userId).toBe('ua');
  });
});

describe('duplicate check', () => {
  it('finds an enrolled palm whatever side the probe header claims, and skips the owner', () => {
    const g = bigGallery();
    const flipped = withHand(T.a2!, 'left');
    // identification searches the header's side: the left palms (none) find nobody
    expect(g.identify(flipped)).toBeNull();
    expect(g.findDuplicate(flipped)?.userId).toBe('ua');
    expect(g.findDuplicate(withHand(T.a2!, 'unknown'))?.userId).toBe('ua');
    expect(g.findDuplicate(T.a2!, 'ua')).toBeNull();
    expect(g.findDuplicate(T.stranger2!)).toBeNull();
    expect(g.findDuplicate(T.c2!)).toBeNull();
  });

  it('uses the lowest bar any identification of the gallery applies', () => {
    const g = bigGallery();
    g.add({ palmId: 'left1', userId: 'l1', hand: 'left', template: T.aLeft1! });
    expect(duplicateBar(g)).toBeCloseTo(decisionBar(1, g.rule.policy.targetFpir), 10);
    expect(duplicateBar(g)).toBeLessThan(decisionBar(g.size, g.rule.policy.targetFpir));
  });
});

describe('TopUsers', () => {
  it('keeps the k closest different users, each by its closest palm', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.double({ min: 0, max: 1, noNaN: true })), {
          maxLength: 60,
        }),
        fc.integer({ min: 1, max: 12 }),
        (palms, k) => {
          const users = palms.map(([u]) => `u${u}`);
          const ids = palms.map((_, i) => `p${i}`);
          const top = new TopUsers();
          top.reset(k);
          palms.forEach(([, d], i) => {
            top.offer(i, d, users);
          });
          const best = new Map<string, number>();
          palms.forEach(([u, d]) => {
            if (!best.has(`u${u}`) || d < best.get(`u${u}`)!) best.set(`u${u}`, d);
          });
          const expected = [...best.values()].sort((a, b) => a - b).slice(0, k);
          const got = top.read(users, ids);
          expect(got.map((c) => c.distance)).toEqual(expected);
          expect(new Set(got.map((c) => c.userId)).size).toBe(got.length);
          for (const c of got) expect(best.get(c.userId)).toBe(c.distance);
        },
      ),
    );
  });
});
