import { describe, expect, it } from 'vitest';
import { errorRates, subjectBootstrap } from './metrics.ts';

describe('error rates', () => {
  it('is zero for separated scores and finds the crossing otherwise', () => {
    expect(errorRates([0.1, 0.2], [0.4, 0.5]).eer).toBe(0);
    const r = errorRates([0.1, 0.2, 0.3, 0.45], [0.4, 0.5, 0.6, 0.7]);
    expect(r.eer).toBeCloseTo(0.25, 5);
  });

  it('reads FRR at a FAR from the impostor quantile', () => {
    const impostor = Array.from({ length: 1000 }, (_, i) => 0.3 + i / 10000);
    const genuine = [0.1, 0.2, 0.29, 0.35];
    const r = errorRates(genuine, impostor);
    expect(r.frrAtFar(1e-3)).toBe(0.25);
    expect(r.det.length).toBeGreaterThan(10);
  });
});

describe('subject bootstrap', () => {
  it('brackets the observed FRR and widens to 3/n when no error was seen', () => {
    let s = 1;
    const random = () => {
      s = (s * 16807) % 2147483647;
      return s / 2147483647;
    };
    // 20 subjects × 10 genuine pairs; subjects 0–3 reject half their pairs
    const genuine: number[] = [];
    const genuineSubject: number[] = [];
    for (let k = 0; k < 20; k++)
      for (let j = 0; j < 10; j++) {
        genuine.push(k < 4 && j < 5 ? 0.5 : 0.1);
        genuineSubject.push(k);
      }
    const impostor = Array.from({ length: 400 }, () => 0.45);
    const impostorSubject = Array.from({ length: 400 }, (_, i) => i % 20);
    const pairs = { genuine, genuineSubject, impostor, impostorSubject };
    const { frr, far } = subjectBootstrap(pairs, 0.3, random);
    expect(frr.lo).toBeLessThan(0.1);
    expect(frr.hi).toBeGreaterThan(0.1);
    expect(frr.lo).toBeGreaterThanOrEqual(0);
    expect(far).toEqual({ lo: 0, hi: 3 / 400 });
  });
});
