import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { describe, expect, it } from 'vitest';
import { locateHand, otsu } from './hand-geometry.ts';
import type { GrayImage } from './image-io.ts';
import { processCapture } from './pipeline.ts';
import { bilinear } from './roi-input.ts';
import {
  armDirection,
  meanShiftCentre,
  PEG_FRAME_RADIUS,
  PEG_MASK_LEVEL,
  pegHandMask,
  pegPose,
  pegRoi,
  principalAxis,
} from './roi-pegs.ts';
import { SENSOR_PROFILES } from './sensor-profiles.ts';

const DEG = Math.PI / 180;
const angleDiff = (a: number, b: number) => Math.abs(Math.atan2(Math.sin(a - b), Math.cos(a - b)));

/**
 * A peg-held hand's silhouette (1 = hand): an oval palm of half-width `r` centred at (px, py), four
 * fingers and a thumb, and the arm running from the palm out of the frame, all turned so that the
 * fingers point along `up` (rad, image coordinates).
 */
function handMask(
  w: number,
  h: number,
  px: number,
  py: number,
  r: number,
  up: number,
  arm = 0.8,
): Uint8Array {
  const m = new Uint8Array(w * h);
  const ux = Math.cos(up);
  const uy = Math.sin(up);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      // hand coordinates: a along the fingers, b across (thumb at b > 0)
      const a = (x - px) * ux + (y - py) * uy;
      const b = -(x - px) * uy + (y - py) * ux;
      const palm = (a / (1.25 * r)) ** 2 + (b / r) ** 2 <= 1;
      const forearm = a < 0 && Math.abs(b) < arm * r;
      let finger = false;
      for (let k = 0; k < 4; k++) {
        const c = (-0.75 + 0.5 * k) * r;
        if (Math.abs(b - c) < 0.2 * r && a > 0 && a < 1.25 * r + (k === 1 ? 2.2 : 1.8) * r) finger = true;
      }
      // the thumb leaves the palm's side at an angle
      const ta = a + 0.2 * r;
      const tb = b - 0.9 * r;
      const thumb =
        Math.abs(ta * 0.5 - tb * 0.87) < 0.22 * r &&
        ta * 0.87 + tb * 0.5 > 0 &&
        ta * 0.87 + tb * 0.5 < 1.6 * r;
      if (palm || forearm || finger || thumb) m[y * w + x] = 1;
    }
  }
  return m;
}

/** City-block distance to the background (two passes) and the first pixel farthest from it. */
function largestInscribed(m: Uint8Array, w: number, h: number) {
  const d = new Uint16Array(w * h);
  for (let i = 0; i < d.length; i++) d[i] = m[i] ? 60000 : 0;
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const i = y * w + x;
      if (!d[i]) continue;
      const up = y > 0 ? d[i - w]! : 0;
      const left = x > 0 ? d[i - 1]! : 0;
      d[i] = Math.min(d[i]!, up + 1, left + 1);
    }
  let best = 0;
  let at = 0;
  for (let y = h - 1; y >= 0; y--)
    for (let x = w - 1; x >= 0; x--) {
      const i = y * w + x;
      if (!d[i]) continue;
      const down = y < h - 1 ? d[i + w]! : 0;
      const right = x < w - 1 ? d[i + 1]! : 0;
      d[i] = Math.min(d[i]!, down + 1, right + 1);
      if (d[i]! >= best) {
        best = d[i]!;
        at = i;
      }
    }
  return { distance: d, x: at % w, y: Math.floor(at / w) };
}

/** A frame turned by `angle` about its centre (background where nothing maps). */
function rotate(frame: GrayImage, angle: number): GrayImage {
  const { width: w, height: h } = frame;
  const out = new Uint8Array(w * h);
  const c = Math.cos(angle);
  const s = Math.sin(angle);
  const cx = (w - 1) / 2;
  const cy = (h - 1) / 2;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const sx = cx + c * (x - cx) + s * (y - cy);
      const sy = cy - s * (x - cx) + c * (y - cy);
      const inside = sx >= 0 && sy >= 0 && sx <= w - 1 && sy <= h - 1;
      out[y * w + x] = inside ? Math.round(bilinear(frame, sx, sy)) : frame.data[0]!;
    }
  }
  return { width: w, height: h, data: out };
}

describe('peg-held hand ROI (roi-pegs.ts)', () => {
  const w = 320;
  const h = 240;
  const r = 40;

  it('points from the palm to where the arm leaves the frame', () => {
    for (const up of [Math.PI, Math.PI - 12 * DEG, -Math.PI / 2 + 8 * DEG]) {
      const m = handMask(w, h, 170, 120, r, up);
      const arm = armDirection(m, w, h, 170, 120);
      expect(arm).not.toBeNull();
      // the mean border pixel lies near the arm's axis (within the arm's width seen from the palm)
      expect(angleDiff(arm!, up + Math.PI)).toBeLessThan(12 * DEG);
    }
    // a thumb (or fingers) cut by the frame elsewhere does not count: the wrist is the widest crossing
    const cut = handMask(w, h, 170, 60, r, Math.PI);
    expect(cut.subarray(0, w).some((v, x) => v === 1 && x < 200)).toBe(true);
    expect(angleDiff(armDirection(cut, w, h, 170, 60)!, 0)).toBeLessThan(3 * DEG);
    // a hand wholly inside the frame has no arm to point from
    const inside = new Uint8Array(w * h);
    for (let y = 80; y < 160; y++) for (let x = 100; x < 200; x++) inside[y * w + x] = 1;
    expect(armDirection(inside, w, h, 150, 120)).toBeNull();
  });

  it('finds the principal axis of an oval at any angle, on the side asked for', () => {
    for (const t of [0, 20 * DEG, -35 * DEG, 100 * DEG]) {
      const m = new Uint8Array(w * h);
      for (let y = 0; y < h; y++)
        for (let x = 0; x < w; x++) {
          const a = (x - 160) * Math.cos(t) + (y - 120) * Math.sin(t);
          const b = -(x - 160) * Math.sin(t) + (y - 120) * Math.cos(t);
          if ((a / 60) ** 2 + (b / 30) ** 2 <= 1) m[y * w + x] = 1;
        }
      const axis = principalAxis(m, w, h, 160, 120, 100, t + 0.3);
      expect(angleDiff(axis.angle, t)).toBeLessThan(0.5 * DEG);
      // the weights fall off with the distance to the centre, so the long axis reads shorter than 2×
      expect(axis.elongation).toBeGreaterThan(1.6);
      expect(axis.elongation).toBeLessThan(2);
      // the other direction of the same axis when asked from the other side
      expect(
        angleDiff(principalAxis(m, w, h, 160, 120, 100, t + Math.PI - 0.3).angle, t + Math.PI),
      ).toBeLessThan(0.5 * DEG);
    }
  });

  it('lets a blob at the rim of the disc (a sleeve, a bangle) turn the axis little', () => {
    const oval = () => {
      const m = new Uint8Array(w * h);
      for (let y = 0; y < h; y++)
        for (let x = 0; x < w; x++) if (((x - 160) / 60) ** 2 + ((y - 120) / 30) ** 2 <= 1) m[y * w + x] = 1;
      return m;
    };
    const withBlob = (bx: number, by: number) => {
      const m = oval();
      for (let y = by - 6; y <= by + 6; y++) for (let x = bx - 6; x <= bx + 6; x++) m[y * w + x] = 1;
      return principalAxis(m, w, h, 160, 120, 100, 0).angle;
    };
    // the same 13 × 13 blob off the axis: near the rim it turns the axis far less than inside
    const rim = withBlob(160 + 60, 120 + 70);
    const inner = withBlob(160 + 30, 120 + 35);
    expect(angleDiff(rim, 0)).toBeLessThan(1.5 * DEG);
    expect(angleDiff(inner, 0)).toBeGreaterThan(2 * angleDiff(rim, 0));
  });

  it('settles on the same palm centre wherever along the palm the inscribed circle lies', () => {
    const up = Math.PI - 10 * DEG;
    const m = handMask(w, h, 160, 120, r, up);
    // inscribed circles found up to half a radius apart along the palm (it is longer than wide)
    const starts = [-0.5, 0, 0.5].map((k) => ({
      x: 160 + k * r * Math.cos(up),
      y: 120 + k * r * Math.sin(up),
    }));
    const centres = starts.map((s) => meanShiftCentre(m, w, h, s.x, s.y, 1.4 * r));
    for (const c of centres) expect(Math.hypot(c.x - centres[1]!.x, c.y - centres[1]!.y)).toBeLessThan(1);
    // and the centre moves with the hand
    const moved = handMask(w, h, 172, 114, r, up);
    const c2 = meanShiftCentre(moved, w, h, 172, 114, 1.4 * r);
    expect(Math.hypot(c2.x - 12 - centres[1]!.x, c2.y + 6 - centres[1]!.y)).toBeLessThan(1);
  });

  it('starts on the palm, not on a forearm as wide as the palm', () => {
    const up = Math.PI - 6 * DEG;
    const m = handMask(w, h, 130, 120, r, up, 1.3);
    const { distance, x, y } = largestInscribed(m, w, h);
    const pose = pegPose(m, w, h, x, y, r, null, distance);
    expect(pose).not.toBeNull();
    // the palm's centre of mass lies between the palm's centre and the wrist, not out on the arm
    const along = (pose!.cx - 130) * Math.cos(up) + (pose!.cy - 120) * Math.sin(up);
    expect(along).toBeLessThan(0.2 * r);
    expect(along).toBeGreaterThan(-0.8 * r);
  });

  it('turns the ROI with the hand, not by quarter turns', () => {
    const ups: number[] = [];
    for (const turn of [0, 9 * DEG, -14 * DEG]) {
      const up = Math.PI + turn;
      const pose = pegPose(handMask(w, h, 170, 120, r, up), w, h, 170, 120, r, null);
      expect(pose).not.toBeNull();
      expect(pose!.from).toBe('arm');
      ups.push(pose!.up);
    }
    // the axis is that of the whole hand, thumb included: a fixed offset, turned with the hand
    expect(angleDiff(ups[1]! - ups[0]!, 9 * DEG)).toBeLessThan(1.5 * DEG);
    expect(angleDiff(ups[2]! - ups[0]!, -14 * DEG)).toBeLessThan(1.5 * DEG);
    expect(angleDiff(ups[0]!, Math.PI)).toBeLessThan(15 * DEG);
    // a hand the frame does not cut takes its direction from the valleys, or has none
    const free = new Uint8Array(w * h);
    const whole = handMask(w, h, 170, 120, 25, Math.PI);
    for (let y = 10; y < h - 10; y++) for (let x = 10; x < w - 10; x++) free[y * w + x] = whole[y * w + x]!;
    expect(pegPose(free, w, h, 170, 120, 25, null)).toBeNull();
    expect(pegPose(free, w, h, 170, 120, 25, Math.PI)?.from).toBe('valleys');
  });

  it('takes the square from the inscribed radius, or from the frame on a fixed-geometry sensor', () => {
    const m = handMask(w, h, 170, 120, r, Math.PI);
    const byRadius = pegRoi(m, w, h, 170, 120, r, 1.2, null);
    expect(byRadius!.side).toBeCloseTo(1.2 * r, 9);
    // the same pose, the side no longer following the hand: a thumb spread wider (a larger
    // inscribed circle) leaves it unchanged
    const byFrame = pegRoi(m, w, h, 170, 120, r, 1.2, null, undefined, 0.26);
    const wider = pegRoi(m, w, h, 170, 120, 1.1 * r, 1.2, null, undefined, 0.26);
    expect(byFrame!.side).toBeCloseTo(0.26 * h, 9);
    expect(wider).toEqual(byFrame);
    // the pose's discs scale with the device too: the same pose as from the radius the side stands for
    const same = pegRoi(m, w, h, 170, 120, (0.26 * h) / 1.2, 1.2, null);
    expect(byFrame).toEqual(same);
    expect(Math.hypot(byFrame!.cx - byRadius!.cx, byFrame!.cy - byRadius!.cy)).toBeLessThan(0.2 * r);
    // frameRadiusWeight 0.5: the side follows the hand halfway, so a hand 19 % smaller in the frame
    // (another board) gets a square 10 % smaller, and a weight of 0 is the device's scale alone
    const half = pegRoi(m, w, h, 170, 120, r, 1.2, null, undefined, 0.26, 0.5);
    expect(half!.side).toBeCloseTo(0.26 * h * Math.sqrt(r / (PEG_FRAME_RADIUS * h)), 9);
    const smaller = pegRoi(m, w, h, 170, 120, 0.81 * r, 1.2, null, undefined, 0.26, 0.5);
    expect(smaller!.side / half!.side).toBeCloseTo(0.9, 9);
    expect(pegRoi(m, w, h, 170, 120, r, 1.2, null, undefined, 0.26, 0)).toEqual(byFrame);
  });

  it('keeps the fingers and the shadowed edge of a hand darker than the Otsu level (colour mask)', () => {
    // a dark-skinned hand on a dark cloth: background 30–50, the palm 170, the fingers and the
    // palm's shadowed edge (the little finger's side, b < −0.55 r) at 88: Otsu cuts between the
    // background and the palm, under the fingers
    const up = Math.PI - 8 * DEG;
    const shape = handMask(w, h, 170, 120, r, up);
    const grey = new Uint8Array(w * h);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) {
        const i = y * w + x;
        const a = (x - 170) * Math.cos(up) + (y - 120) * Math.sin(up);
        const b = -(x - 170) * Math.sin(up) + (y - 120) * Math.cos(up);
        const palm = (a / (1.25 * r)) ** 2 + (b / r) ** 2 <= 1 || a < 0;
        grey[i] = !shape[i] ? 30 + ((x * 7 + y * 13) % 21) : palm && b > -0.55 * r ? 170 : 88;
      }
    const threshold = otsu(grey);
    expect(threshold).toBeGreaterThanOrEqual(88);
    const mask = new Uint8Array(w * h);
    for (let i = 0; i < grey.length; i++) mask[i] = grey[i]! > threshold ? 1 : 0;
    // without a level: the Otsu mask's largest component, which lost the fingers and the edge
    const otsuComp = pegHandMask(grey, mask, w, h, threshold);
    const shapeArea = shape.reduce((n, v) => n + v, 0);
    const otsuArea = otsuComp.reduce((n, v) => n + v, 0);
    expect(otsuArea).toBeLessThan(0.8 * shapeArea);
    // halfway between the background's mean and the Otsu level: the whole hand, nothing else
    const comp = pegHandMask(grey, mask, w, h, threshold, PEG_MASK_LEVEL);
    let same = 0;
    for (let i = 0; i < comp.length; i++) if (comp[i] === shape[i]) same++;
    expect(same).toBe(w * h);
    // and the ROI's axis follows the hand on that mask, not on the Otsu mask
    const { distance, x, y } = largestInscribed(comp, w, h);
    const whole = pegRoi(comp, w, h, x, y, r, 1.2, null, distance);
    const cut = pegRoi(otsuComp, w, h, x, y, r, 1.2, null, distance);
    const onShape = pegRoi(shape, w, h, x, y, r, 1.2, null, distance);
    expect(whole).toEqual(onShape);
    expect(angleDiff(cut!.up, onShape!.up)).toBeGreaterThan(2 * DEG);
  });

  it('crops a rendered peg-held hand on its palm, turned with the hand (colour profile)', async () => {
    const frame = await renderPalm({ identity: 'pegs-1', hand: 'right', capture: 1, sensor: 'colour' });
    const profile = SENSOR_PROFILES.colour.stages.roi.proportions;
    const g = locateHand(frame, profile);
    expect(g.roi).toBeDefined();
    // a fixed-geometry sensor: the side is the profile's share of the frame, blended halfway towards
    // the hand's own scale (frameRadiusWeight)
    const short = Math.min(frame.width, frame.height);
    const expected =
      profile.frameShare! * short * (g.radius / (PEG_FRAME_RADIUS * short)) ** profile.frameRadiusWeight!;
    expect(g.roi!.side / expected).toBeCloseTo(1, 2);
    // fingers to the left on the COEP-like render; the ROI centre on the hand, near the palm's
    expect(angleDiff(g.roi!.up, Math.PI)).toBeLessThan(30 * DEG);
    const sx = Math.round((g.roi!.cx + 0.5) / g.scale - 0.5);
    const sy = Math.round((g.roi!.cy + 0.5) / g.scale - 0.5);
    expect(g.mask[sy * g.work.width + sx]).toBe(1);
    expect(Math.hypot(g.roi!.cx - g.cx, g.roi!.cy - g.cy)).toBeLessThan(g.radius);
    const turned = locateHand(rotate(frame, 10 * DEG), profile);
    expect(turned.roi).toBeDefined();
    expect(angleDiff(turned.roi!.up - g.roi!.up, 10 * DEG)).toBeLessThan(3 * DEG);
    // and the capture path enrols it
    const r = await processCapture(frame, { sensor: 'colour' });
    expect(r.ok, r.ok ? '' : r.reason).toBe(true);
  }, 60_000);
});
