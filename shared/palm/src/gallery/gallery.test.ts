import { AppError } from '@palmid/contracts/errors';
import { renderRoi } from '@palmid/firmware-sim/synth/roi';
import { beforeAll, describe, expect, it } from 'vitest';
import { extractRoiTemplate } from '../capture/roi-template.ts';
import { IMPOSTOR_MODELS } from '../decision.ts';
import { decodeTemplate, encodeTemplate } from '../template.ts';
import { createExhaustiveGallery } from './exhaustive.ts';
import { createGallery, createMatcher } from './gallery.ts';

const enrolled: Uint8Array[] = [];
const probes: Uint8Array[] = [];

beforeAll(async () => {
  for (let i = 0; i < 12; i++) {
    enrolled.push(
      await extractRoiTemplate(renderRoi({ identity: `g${i}`, style: 'contact', session: 1, sample: 0 })),
    );
    probes.push(
      await extractRoiTemplate(renderRoi({ identity: `g${i}`, style: 'contact', session: 2, sample: 1 })),
    );
  }
});

describe('matcher', () => {
  it('verifies the same palm and refuses another', () => {
    const m = createMatcher();
    expect(m.verify(enrolled[0]!, probes[0]!).match).toBe(true);
    expect(m.verify(enrolled[0]!, probes[1]!).match).toBe(false);
  });

  it('rejects malformed templates as INVALID_REQUEST on field template', () => {
    const m = createMatcher();
    const bad = Uint8Array.from(enrolled[0]!);
    bad[500] = bad[500]! ^ 1;
    expect(() => m.validate(bad)).toThrow(AppError);
    expect(() => m.verify(bad, enrolled[0]!)).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ field: 'template' }) }),
    );
  });
});

describe('two-stage gallery', () => {
  it('identifies enrolled palms like the exhaustive scan, and nobody for a stranger', async () => {
    const g = createGallery();
    const ex = createExhaustiveGallery();
    enrolled.forEach((t, i) => {
      g.add({ palmId: `p${i}`, userId: `u${i}`, hand: 'right', template: t });
      ex.add({ palmId: `p${i}`, userId: `u${i}`, hand: 'right', template: t });
    });
    expect(g.size).toBe(12);
    for (let i = 0; i < probes.length; i++) {
      expect(g.identify(probes[i]!)?.userId).toBe(`u${i}`);
      expect(ex.identify(probes[i]!)?.userId).toBe(`u${i}`);
    }
    const stranger = await extractRoiTemplate(
      renderRoi({ identity: 'stranger', style: 'contact', session: 1, sample: 0 }),
    );
    expect(g.identify(stranger)).toBeNull();
  });

  it('forgets every palm of an erased user and keeps the others findable', () => {
    const g = createGallery();
    for (const [i, t] of enrolled.entries())
      g.add({ palmId: `p${i}`, userId: `u${i % 4}`, hand: 'right', template: t });
    g.removeUser('u1');
    expect(g.size).toBe(9);
    for (let i = 0; i < probes.length; i++) {
      const hit = g.identify(probes[i]!);
      if (i % 4 === 1) expect(hit?.userId).not.toBe('u1');
      else expect(hit?.palmId).toBe(`p${i}`);
    }
    g.removeUser('nobody');
    expect(g.size).toBe(9);
  });

  it('holds one template coding: the other is refused by name, and the coding chooses the impostor model', () => {
    const fine = createGallery(undefined, { coding: 'fine' });
    expect(fine.coding).toBe('fine');
    expect(fine.rule.policy.model).toEqual(IMPOSTOR_MODELS.fine);
    expect(createGallery().rule.policy.model).toEqual(IMPOSTOR_MODELS.wide);
    const wideTemplate = enrolled[0]!;
    const reason = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        return (err as AppError).details.reason;
      }
      return undefined;
    };
    expect(reason(() => fine.add({ palmId: 'p', userId: 'u', hand: 'right', template: wideTemplate }))).toBe(
      'wrong_coding',
    );
    expect(reason(() => fine.identify(wideTemplate))).toBe('wrong_coding');
    expect(reason(() => createMatcher({ coding: 'fine' }).validate(wideTemplate))).toBe('wrong_coding');
    expect(fine.size).toBe(0);
    // a fine-coded template of the same palm is accepted and found
    const t = decodeTemplate(wideTemplate);
    const asFine = encodeTemplate({ ...t, coding: 'fine' });
    fine.add({ palmId: 'p', userId: 'u', hand: 'right', template: asFine });
    expect(fine.identify(asFine)?.userId).toBe('u');
  });

  it('rejects malformed templates on add and identify', () => {
    const g = createGallery();
    expect(() => g.add({ palmId: 'x', userId: 'y', hand: 'left', template: new Uint8Array(3) })).toThrow(
      AppError,
    );
    expect(() => g.identify(new Uint8Array(928))).toThrow(AppError);
    expect(g.size).toBe(0);
  });
});
