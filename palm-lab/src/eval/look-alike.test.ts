import { describe, expect, it } from 'vitest';
import { lookAlikeIdentities } from './look-alike.ts';

/** A seeded jitter in [0, 1): the same sets of distances on every run. */
function jitter(i: number, j: number): number {
  const x = Math.sin(i * 12.9898 + j * 78.233) * 43758.5453;
  return x - Math.floor(x);
}

describe('lookAlikeIdentities', () => {
  // 8 identities × 4 images; identity "p7" is "p2" filed again: their cross pairs are genuine-like
  const labels = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'];
  const subjectOf = labels.flatMap((_, s) => [s, s, s, s]);
  const person = (s: number) => (s === 7 ? 2 : s);
  const distance = (i: number, j: number) => {
    const same = person(subjectOf[i]!) === person(subjectOf[j]!);
    const cross = subjectOf[i] !== subjectOf[j];
    if (same) return (cross ? 0.16 : 0.1) + 0.05 * jitter(i, j);
    return 0.4 + 0.1 * jitter(i, j);
  };

  it('lists the label pair of one person first, flags it and no other pair', () => {
    const r = lookAlikeIdentities(labels, subjectOf, distance, { top: 5 });
    expect(r.identities).toBe(8);
    expect(r.images).toBe(32);
    expect(r.genuine_pairs).toBe(8 * 6);
    expect(r.impostor_pairs).toBe((32 * 31) / 2 - 48);
    expect(r.identity_pairs).toBe(28);
    expect(r.closest).toHaveLength(5);
    const first = r.closest[0]!;
    expect([first.a, first.b]).toEqual(['p2', 'p7']);
    expect(first.pairs).toBe(16);
    expect(first.looks_genuine).toBe(true);
    // no impostor pair of another label pair is as close as its median
    expect(first.impostors_closer).toBe(0);
    expect(first.impostor_quantile).toBe(0);
    // its cross pairs (0.16–0.21) lie above every genuine pair of one label (0.10–0.15)
    expect(first.genuine_quantile).toBe(1);
    expect(first.below_genuine_median).toBe(0);
    expect(first.robust_z).toBeLessThan(-8);
    expect(r.flagged).toBe(1);
    expect(r.closest.slice(1).every((p) => !p.looks_genuine && p.robust_z > -3)).toBe(true);
    // closest first
    for (let k = 1; k < r.closest.length; k++)
      expect(r.closest[k]!.median).toBeGreaterThanOrEqual(r.closest[k - 1]!.median);
  });

  it('flags nothing when every label is a different person', () => {
    const distinct = (i: number, j: number) =>
      subjectOf[i] === subjectOf[j] ? 0.1 + 0.05 * jitter(i, j) : 0.4 + 0.1 * jitter(i, j);
    const r = lookAlikeIdentities(labels, subjectOf, distinct);
    expect(r.flagged).toBe(0);
    expect(r.closest).toHaveLength(10);
    expect(r.genuine!.max).toBeLessThan(r.impostor.min);
  });

  it('counts the closer impostor pairs of the other label pairs only', () => {
    // three identities, one image each: the pair (a, b) at 0.2, (a, c) at 0.3, (b, c) at 0.4
    const d = [
      [0, 0.2, 0.3],
      [0.2, 0, 0.4],
      [0.3, 0.4, 0],
    ];
    const r = lookAlikeIdentities(['a', 'b', 'c'], [0, 1, 2], (i, j) => d[i]![j]!, { flagZ: 0.5 });
    expect(r.closest.map((p) => `${p.a}/${p.b}`)).toEqual(['a/b', 'a/c', 'b/c']);
    expect(r.closest.map((p) => p.impostors_closer)).toEqual([0, 1, 2]);
    expect(r.closest.map((p) => p.impostor_quantile)).toEqual([0, 0.5, 1]);
    // medians 0.2, 0.3, 0.4: their median 0.3, scaled MAD 0.148: z −0.67, 0, +0.67
    expect(r.identity_pair_medians.mad).toBeCloseTo(0.14826, 5);
    expect(r.closest.map((p) => p.robust_z)).toEqual([-0.67, 0, 0.67]);
    expect(r.closest.map((p) => p.looks_genuine)).toEqual([true, false, false]);
    expect(lookAlikeIdentities(['a', 'b', 'c'], [0, 1, 2], (i, j) => d[i]![j]!).flagged).toBe(0);
    // no genuine pair at all: the genuine ranks are unknown
    expect(r.genuine_pairs).toBe(0);
    expect(r.genuine).toBeNull();
    expect(r.closest[0]!.genuine_quantile).toBeNull();
  });
});
