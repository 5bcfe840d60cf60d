import { describe, expect, it } from 'vitest';
import {
  convexityDefects,
  indexSide,
  largestComponent,
  lineTilt,
  outlineValleys,
  PEG_VALLEYS,
  traceOutline,
  valleyRun,
} from './hand-contour.ts';

const W = 320;
const H = 240;

/**
 * A hand mask with its fingers pointing left and cut by the left edge of the frame, the palm cut
 * by the right edge, the thumb (on top) out of the frame: the framing of the grey-camera
 * development set. Finger widths run 26 / 24 / 22 / 18 px from the top (index) to the little.
 */
function cutHand(options: { fusedLittle?: boolean; thumbX?: number } = {}): Uint8Array {
  const m = new Uint8Array(W * H);
  const set = (x: number, y: number) => {
    if (x >= 0 && y >= 0 && x < W && y < H) m[y * W + x] = 1;
  };
  // palm
  for (let y = 40; y < 200; y++) for (let x = 150; x < W; x++) set(x, y);
  // fingers: rounded roots so the valleys are curves, as on a hand
  const fingers = [
    { y: 48, w: 26 },
    { y: 88, w: 24 },
    { y: 128, w: 22 },
    { y: 166, w: 18 },
  ];
  for (const f of fingers) {
    for (let x = 0; x < 160; x++) for (let y = f.y - f.w / 2; y < f.y + f.w / 2; y++) set(x, Math.round(y));
  }
  // the ring and little fingers touching along their length: no valley between them
  if (options.fusedLittle) for (let x = 0; x < 160; x++) for (let y = 117; y < 175; y++) set(x, y);
  // a thumb leaving the frame at the top, beside the index finger
  if (options.thumbX !== undefined)
    for (let y = 0; y < 40; y++) for (let x = options.thumbX; x < options.thumbX + 60; x++) set(x, y);
  // a speck of noise that is not the hand
  for (let y = 5; y < 8; y++) for (let x = 300; x < 303; x++) set(x, y);
  return m;
}

describe('outline valleys', () => {
  it('keeps the largest component and traces a closed outline around it', () => {
    const { comp, size } = largestComponent(cutHand(), W, H);
    expect(comp[6 * W + 301]).toBe(0);
    expect(size).toBeGreaterThan(160 * 170);
    const outline = traceOutline(comp, W, H);
    expect(outline.length).toBeGreaterThan(500);
    for (let i = 1; i < outline.length; i++) {
      const p = outline[i - 1]!;
      const q = outline[i]!;
      expect(Math.max(Math.abs(p.x - q.x), Math.abs(p.y - q.y))).toBe(1);
    }
  });

  it('finds the three finger valleys of a hand cut by the frame, fingers-up and the index side', () => {
    const { comp } = largestComponent(cutHand(), W, H);
    expect(convexityDefects(traceOutline(comp, W, H)).length).toBeGreaterThanOrEqual(3);
    const r = outlineValleys(comp, W, H, 235, 120, 80);
    expect(r).not.toBeNull();
    const ys = r!.valleys.map((v) => v.y).sort((a, b) => a - b);
    // the gaps between the fingers lie at y ≈ 68, 108, 147, at the palm's edge (x ≈ 150)
    expect(ys[0]).toBeGreaterThan(60);
    expect(ys[0]).toBeLessThan(78);
    expect(ys[1]).toBeGreaterThan(100);
    expect(ys[1]).toBeLessThan(116);
    expect(ys[2]).toBeGreaterThan(139);
    expect(ys[2]).toBeLessThan(156);
    for (const v of r!.valleys) expect(Math.abs(v.x - 150)).toBeLessThan(4);
    // fingers up is towards −x
    expect(Math.cos(r!.up)).toBeLessThan(-0.95);
    // the widest outer finger (index, top, y small) lies on the right of "up" (pointing −x, image y down)
    const side = indexSide(comp, W, H, r!.valleys, r!.up);
    expect(side?.side).toBe(1);
  });

  it('does not take the thumb web for a finger valley when the ring/little valley is hidden', () => {
    // with the little finger apart, the three finger valleys win and the web is left over
    const apart = largestComponent(cutHand({ thumbX: 215 }), W, H).comp;
    const found = outlineValleys(apart, W, H, 235, 120, 80);
    expect(found).not.toBeNull();
    const ys = found!.valleys.map((v) => v.y).sort((a, b) => a - b);
    expect(ys[0]).toBeGreaterThan(60);
    expect(ys[2]).toBeLessThan(156);
    for (const v of found!.valleys) expect(Math.abs(v.x - 150)).toBeLessThan(6);
    // fused: web, index/middle, middle/ring is the only run left, too uneven for a hand's
    const fused = largestComponent(cutHand({ thumbX: 215, fusedLittle: true }), W, H).comp;
    expect(outlineValleys(fused, W, H, 235, 120, 80)).toBeNull();
    // hands held by pegs keep the looser rule (their square does not follow the valleys)
    expect(outlineValleys(fused, W, H, 235, 120, 80, PEG_VALLEYS)).not.toBeNull();
  });

  it('keeps the valleys when the outline passes a pixel twice (a one-pixel spur below a valley)', () => {
    // the trace runs down a one-pixel spur and back up, so its pixels come twice; at the x of the
    // valley bottoms the repeated points used to stop the hull's chains from popping, leaving the
    // bottoms on the hull and the valleys without depth
    const m = cutHand();
    for (let y = 200; y < 212; y++) m[y * W + 150] = 1;
    const { comp } = largestComponent(m, W, H);
    const outline = traceOutline(comp, W, H);
    const keys = outline.map((p) => p.y * W + p.x);
    expect(new Set(keys).size).toBeLessThan(keys.length);
    const deep = convexityDefects(outline).filter((d) => d.depth > 100);
    const ys = deep.map((d) => d.point.y).sort((a, b) => a - b);
    expect(ys.length).toBe(3);
    expect(ys[0]).toBeGreaterThan(60);
    expect(ys[2]).toBeLessThan(156);
    const r = outlineValleys(comp, W, H, 235, 120, 80);
    expect(r).not.toBeNull();
    for (const v of r!.valleys) expect(Math.abs(v.x - 150)).toBeLessThan(4);
  });

  it('prefers the finger valleys to a run that takes the thumb web, both passing the rule', () => {
    // four deep defects in outline order, as on a development capture (r = 100): ring/little (the
    // little finger cut by the frame, shallow), middle/ring, index/middle, and the thumb web
    // towards the wrist. The web run is the more even one, but wider and bent.
    const d = (x: number, y: number, depth: number, index: number) => ({ index, point: { x, y }, depth });
    const defects = [d(130, 201, 41, 100), d(115, 166, 115, 200), d(102, 113, 102, 300), d(134, 54, 41, 400)];
    const run = valleyRun(defects, 100);
    expect(run?.map((x) => x.index)).toEqual([100, 200, 300]);
    // either run alone passes (so the choice is the score's, not the rule's)
    expect(valleyRun(defects.slice(1), 100)?.map((x) => x.index)).toEqual([200, 300, 400]);
    expect(valleyRun(defects.slice(0, 3), 100)).not.toBeNull();
  });

  it('refuses a run whose outer defect is the thumb web: nearer the palm centre and wide open', () => {
    // the ring/little valley hidden: web, index/middle, middle/ring (r = 100, palm centre at 230, 110)
    const d = (x: number, y: number, depth: number, index: number, opening: number) => ({
      index,
      point: { x, y },
      depth,
      opening,
      centre: Math.hypot(x - 230, y - 110),
    });
    const web = d(134, 54, 41, 400, 58);
    const run = [d(115, 166, 115, 200, 24), d(102, 113, 102, 300, 20), web];
    expect(valleyRun(run, 100)).toBeNull();
    // the same defect with a narrow gap is a finger valley; the pegs' rule keeps the web run
    expect(valleyRun([run[0]!, run[1]!, { ...web, opening: 30 }], 100)).not.toBeNull();
    expect(valleyRun(run, 100, PEG_VALLEYS)).not.toBeNull();
  });

  it('refuses a run turned away from the palm centre: the thumb web with a narrow gap', () => {
    // fingers pointing left, palm centre at (230, 110), r = 100. The finger run lies square across
    // the direction from the centre; the run that takes a narrow thumb web (towards the wrist, so
    // the web test's opening misses it) for the index/middle valley turns its line by about 25°
    const d = (x: number, y: number, index: number) => ({
      index,
      point: { x, y },
      depth: 60,
      opening: 30,
      centre: Math.hypot(x - 230, y - 110),
    });
    const centre = { x: 230, y: 110 };
    const webRun = [d(115, 166, 200), d(102, 113, 300), d(160, 60, 400)];
    expect(lineTilt(webRun[0]!.point, webRun[2]!.point, centre)).toBeGreaterThan((20 * Math.PI) / 180);
    // it passes every other test: refused only by the tilt, and only where the centre is known
    expect(valleyRun(webRun, 100)).not.toBeNull();
    expect(valleyRun(webRun, 100, undefined, centre)).toBeNull();
    expect(valleyRun(webRun, 100, PEG_VALLEYS, centre)).not.toBeNull();
    const fingerRun = [d(115, 166, 200), d(102, 113, 300), d(110, 60, 400)];
    expect(lineTilt(fingerRun[0]!.point, fingerRun[2]!.point, centre)).toBeLessThan((5 * Math.PI) / 180);
    expect(valleyRun(fingerRun, 100, undefined, centre)?.map((x) => x.index)).toEqual([200, 300, 400]);
  });

  it('refuses a run wider than 1.25 r (the widest well-matched runs span 1.16 r)', () => {
    const d = (y: number, index: number) => ({ index, point: { x: 100, y }, depth: 60 });
    expect(valleyRun([d(0, 1), d(61, 2), d(122, 3)], 100)).not.toBeNull();
    expect(valleyRun([d(0, 1), d(64, 2), d(128, 3)], 100)).toBeNull();
    expect(valleyRun([d(0, 1), d(64, 2), d(128, 3)], 100, PEG_VALLEYS)).not.toBeNull();
  });

  it('lineTilt: 0 for a line square across the direction from the centre, π/2 along it', () => {
    const c = { x: 0, y: 0 };
    expect(lineTilt({ x: -10, y: -50 }, { x: 10, y: -50 }, c)).toBeCloseTo(0, 9);
    expect(lineTilt({ x: 0, y: -40 }, { x: 0, y: -60 }, c)).toBeCloseTo(Math.PI / 2, 9);
    // a line turned by 30° about its middle
    const t = Math.PI / 6;
    const a = { x: -10 * Math.cos(t), y: -50 - 10 * Math.sin(t) };
    const b = { x: 10 * Math.cos(t), y: -50 + 10 * Math.sin(t) };
    expect(lineTilt(a, b, c)).toBeCloseTo(t, 9);
  });

  it('finds both gaps beside a finger cut short, inside one hull edge (nested defects)', () => {
    // fingers fanning out to the left; the middle finger's tip lost (it ends at x 80, inside the
    // hull edge from the index tip to the ring tip), the palm to the right
    const corners = [
      { x: 0, y: 40 }, // index tip
      { x: 150, y: 70 }, // index/middle gap
      { x: 80, y: 95 }, // middle finger cut short
      { x: 150, y: 120 }, // middle/ring gap
      { x: 0, y: 150 }, // ring tip
      { x: 160, y: 200 },
      { x: 300, y: 200 },
      { x: 300, y: 20 },
      { x: 160, y: 20 },
    ];
    const outline: Array<{ x: number; y: number }> = [];
    corners.forEach((p, k) => {
      const q = corners[(k + 1) % corners.length]!;
      const n = Math.ceil(Math.hypot(q.x - p.x, q.y - p.y));
      for (let i = 0; i < n; i++)
        outline.push({
          x: Math.round(p.x + ((q.x - p.x) * i) / n),
          y: Math.round(p.y + ((q.y - p.y) * i) / n),
        });
    });
    const bay = (nested: number) =>
      convexityDefects(outline, nested)
        .filter((d) => d.depth > 30 && d.point.y > 50 && d.point.y < 140)
        .map((d) => d.point);
    // one hull edge spans both gaps: the deeper one only
    expect(bay(0)).toHaveLength(1);
    // one nested level finds the other too, at its bottom
    const both = bay(1).sort((p, q) => p.y - q.y);
    expect(both).toHaveLength(2);
    expect(Math.hypot(both[0]!.x - 150, both[0]!.y - 70)).toBeLessThan(3);
    expect(Math.hypot(both[1]!.x - 150, both[1]!.y - 120)).toBeLessThan(3);
  });

  it('finds no valleys on a blob without fingers', () => {
    const m = new Uint8Array(W * H);
    for (let y = 60; y < 180; y++) for (let x = 100; x < 220; x++) m[y * W + x] = 1;
    expect(outlineValleys(m, W, H, 160, 120, 60)).toBeNull();
  });
});
