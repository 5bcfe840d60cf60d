import { describe, expect, it } from 'vitest';
import { LIVENESS_PASS, LIVENESS_PASS_SCORE, livenessToWire, passesLiveness } from './liveness.ts';

describe('liveness contract', () => {
  it('the two thresholds are the same point, and the conversion keeps pass and fail', () => {
    expect(livenessToWire(LIVENESS_PASS_SCORE)).toBe(LIVENESS_PASS);
    for (const score of [0, 12.5, 49.9, 50, 50.1, 73, 100])
      expect(passesLiveness(livenessToWire(score))).toBe(score >= LIVENESS_PASS_SCORE);
  });

  it('clamps scores outside 0–100', () => {
    expect(livenessToWire(-5)).toBe(0);
    expect(livenessToWire(140)).toBe(1);
  });
});
