import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { describe, expect, it } from 'vitest';
import { seededBytes } from '../../../../test/support/seeded.ts';
import { type HandGeometry, locateHand, towardsMiddle } from './hand-geometry.ts';
import type { GrayImage } from './image-io.ts';
import { bilinear } from './roi-input.ts';
import { sensorProfile } from './sensor-profiles.ts';

/** The frame turned by `angle` (rad, image coordinates) about its centre. */
function rotate(frame: GrayImage, angle: number): GrayImage {
  const { width: w, height: h } = frame;
  const out = new Uint8Array(w * h);
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  const cx = (w - 1) / 2;
  const cy = (h - 1) / 2;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const dx = x - cx;
      const dy = y - cy;
      const sx = cx + c * dx + s * dy;
      const sy = cy - s * dx + c * dy;
      const inside = sx >= 0 && sy >= 0 && sx <= w - 1 && sy <= h - 1;
      out[y * w + x] = inside ? Math.round(bilinear(frame, sx, sy)) : frame.data[0]!;
    }
  }
  return { width: w, height: h, data: out };
}

function mirror(frame: GrayImage): GrayImage {
  const { width: w, height: h } = frame;
  const out = new Uint8Array(w * h);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) out[y * w + x] = frame.data[y * w + (w - 1 - x)]!;
  return { width: w, height: h, data: out };
}

const angleDiff = (a: number, b: number) => Math.abs(Math.atan2(Math.sin(a - b), Math.cos(a - b)));
const DEG = Math.PI / 180;

function roiOf(g: HandGeometry) {
  expect(g.roi).toBeDefined();
  expect(g.valleys).toHaveLength(3);
  return g.roi!;
}

describe('locateHand', () => {
  it('places the ROI from the finger valleys: fingers up, palm-sized, on the palm', async () => {
    for (const hand of ['left', 'right'] as const) {
      const g = locateHand(await renderPalm({ identity: 'geo-1', hand, capture: 2 }));
      const roi = roiOf(g);
      expect(g.hand).toBe(hand);
      expect(g.touchesEdge).toBe(false);
      // the synthetic hands stand within ±0.25 rad of upright
      expect(angleDiff(roi.up, -Math.PI / 2)).toBeLessThan(0.3);
      expect(roi.side / g.radius).toBeGreaterThan(1.2);
      expect(roi.side / g.radius).toBeLessThan(1.8);
      // the valleys lie above the ROI centre, the ROI centre on the hand
      for (const v of g.valleys!) expect(v.y).toBeLessThan(roi.cy);
      expect(g.mask[Math.round(roi.cy) * 320 + Math.round(roi.cx)]).toBe(1);
    }
  });

  it('follows a known rotation of the frame (ROI angle, centre and size)', async () => {
    const frame = await renderPalm({ identity: 'geo-2', hand: 'right', capture: 1 });
    const base = roiOf(locateHand(frame));
    const c = { x: (frame.width - 1) / 2, y: (frame.height - 1) / 2 };
    for (const deg of [-15, -7, 7, 15]) {
      const a = deg * DEG;
      const g = locateHand(rotate(frame, a));
      const roi = roiOf(g);
      expect(g.hand).toBe('right');
      expect(angleDiff(roi.up, base.up + a) / DEG).toBeLessThan(2);
      expect(Math.abs(roi.side / base.side - 1)).toBeLessThan(0.03);
      const ex = c.x + Math.cos(a) * (base.cx - c.x) - Math.sin(a) * (base.cy - c.y);
      const ey = c.y + Math.sin(a) * (base.cx - c.x) + Math.cos(a) * (base.cy - c.y);
      expect(Math.hypot(roi.cx - ex, roi.cy - ey) / base.side).toBeLessThan(0.04);
    }
  });

  it('outline valleys (camera profiles) follow small turns of the frame sub-pixel', async () => {
    // the valleys are refined across their gaps and "up" fitted through all three, so the square
    // turns with the hand by a fraction of a degree, not by the work grid's steps
    const roiProps = sensorProfile('grey-dark').stages.roi.proportions;
    const frame = await renderPalm({ identity: 'geo-5', hand: 'left', capture: 1 });
    const base = locateHand(frame, roiProps);
    const b = roiOf(base);
    for (const v of base.valleys!) expect(Number.isInteger(v.x) && Number.isInteger(v.y)).toBe(false);
    const errors: number[] = [];
    for (const deg of [-6, -4, -2, 2, 4, 6]) {
      const roi = roiOf(locateHand(rotate(frame, deg * DEG), roiProps));
      errors.push(angleDiff(roi.up, b.up + deg * DEG) / DEG);
      expect(Math.abs(roi.side / b.side - 1)).toBeLessThan(0.03);
    }
    expect(Math.max(...errors)).toBeLessThan(1.5);
    expect(errors.reduce((s, e) => s + e, 0) / errors.length).toBeLessThan(0.8);
  });

  it('tells the hands apart by the thumb: a mirrored right hand is a left hand', async () => {
    const frame = await renderPalm({ identity: 'geo-3', hand: 'right', capture: 3 });
    const g = locateHand(frame);
    const m = locateHand(mirror(frame));
    expect(g.hand).toBe('right');
    expect(m.hand).toBe('left');
    expect(angleDiff(roiOf(m).up, Math.PI - roiOf(g).up) / DEG).toBeLessThan(2);
  });

  it('finds no fingers on a blank frame, and a hand pushed out of the frame is cut', async () => {
    const blank = locateHand({ width: 64, height: 64, data: new Uint8Array(64 * 64) });
    expect(blank.up).toBeNull();
    for (const capture of [1, 2, 3]) {
      const g = locateHand(
        await renderPalm({ identity: 'geo-4', hand: 'left', capture, condition: 'partial' }),
      );
      expect(g.up === null || g.hand === null || g.touchesEdge).toBe(true);
    }
  });
});

describe('work scale', () => {
  /** Reference 2 × 2 block average, rounded half up. */
  function blockAverage(frame: GrayImage): Uint8Array {
    const w = Math.floor(frame.width / 2);
    const h = Math.floor(frame.height / 2);
    const out = new Uint8Array(w * h);
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const i = 2 * y * frame.width + 2 * x;
        const d = frame.data;
        out[y * w + x] = Math.round((d[i]! + d[i + 1]! + d[i + frame.width]! + d[i + frame.width + 1]!) / 4);
      }
    }
    return out;
  }

  it('block-averages VGA frames exactly, word-aligned or not', () => {
    const bytes = seededBytes(640 * 480 + 1, 7);
    for (const data of [bytes.subarray(0, 640 * 480), bytes.subarray(1)]) {
      const frame: GrayImage = { width: 640, height: 480, data };
      const g = locateHand(frame);
      expect(g.scale).toBe(2);
      expect(Array.from(g.work.data)).toEqual(Array.from(blockAverage(frame)));
    }
  });
});

describe('work scale, larger frames', () => {
  it('block-averages by the generic factor exactly (1600 × 1200 → 5×)', () => {
    const data = seededBytes(1603 * 1201, 11);
    const frame: GrayImage = { width: 1603, height: 1201, data };
    const g = locateHand(frame);
    expect(g.scale).toBe(5);
    const w = Math.floor(1603 / 5);
    const h = Math.floor(1201 / 5);
    expect(g.work.width).toBe(w);
    expect(g.work.height).toBe(h);
    for (let y = 0; y < h; y += 7) {
      for (let x = 0; x < w; x += 3) {
        let s = 0;
        for (let dy = 0; dy < 5; dy++)
          for (let dx = 0; dx < 5; dx++) s += data[(5 * y + dy) * 1603 + 5 * x + dx]!;
        expect(g.work.data[y * w + x]).toBe(Math.round(s / 25));
      }
    }
  });
});

describe('towardsMiddle (outline valleys: up steadied by the palm centre)', () => {
  // valleys across the top of a palm centred at the origin, their line turned 20° off square
  const t = (20 * Math.PI) / 180;
  const valleys = [-1, 0, 1].map((k) => ({ x: 40 * k * Math.cos(t), y: -100 + 40 * k * Math.sin(t) }));
  const up = -Math.PI / 2 + t;

  it('keeps up at weight 0, takes the direction to the valleys at weight 1', () => {
    expect(towardsMiddle(up, valleys, 0, 0, 0)).toBeCloseTo(up, 9);
    expect(towardsMiddle(up, valleys, 0, 0, 1)).toBeCloseTo(-Math.PI / 2, 9);
  });

  it('turns up part of the way (unit vectors averaged), on the side of the centre direction', () => {
    const blended = towardsMiddle(up, valleys, 0, 0, 0.3);
    expect(blended).toBeLessThan(up);
    expect(blended).toBeGreaterThan(-Math.PI / 2);
    const x = 0.7 * Math.cos(up) + 0.3 * 0;
    const y = 0.7 * Math.sin(up) - 0.3;
    expect(blended).toBeCloseTo(Math.atan2(y, x), 9);
  });

  it('keeps up when the valleys sit on the centre (no direction to take)', () => {
    const flat = [
      { x: -5, y: 0 },
      { x: 0, y: 0 },
      { x: 5, y: 0 },
    ];
    expect(towardsMiddle(1.2, flat, 0, 0, 0.3)).toBe(1.2);
  });
});
