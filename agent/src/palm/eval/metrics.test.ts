import { describe, expect, it } from 'vitest';
import { errorRates } from './metrics.ts';

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
