import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { describe, expect, it } from 'vitest';
import { decodeTemplate, GRID } from '../../template.ts';
import { locateHand } from '../hand-geometry.ts';
import type { GrayImage } from '../image-io.ts';
import { ROI_SIZE } from '../model-graph.ts';
import { processCapture } from '../pipeline.ts';
import { SENSOR_PROFILES, type SensorProfile } from '../sensor-profiles.ts';
import { extractResponses, runCode } from './code.ts';
import { DEFAULT_DETECT_PARAMS, runDetect } from './detect.ts';
import { geometryStages } from './index.ts';
import { DEFAULT_LIVENESS_PARAMS, runLiveness } from './liveness.ts';
import { runOutline } from './outline.ts';
import { DEFAULT_QUALITY_PARAMS, qualityScore, runMotion, runQuality, runSharpness } from './quality.ts';
import { DEFAULT_ROI_PARAMS, placeRoi, runRoi, SIMULATOR_ROI } from './roi.ts';
import { DEFAULT_VALLEYS_PARAMS, runValleys } from './valleys.ts';

const palm = (hand: 'left' | 'right' = 'right', condition?: 'underexposed' | 'partial') =>
  renderPalm({ identity: 'stages-1', hand, capture: 1, ...(condition ? { condition } : {}) });
const negative = (f: GrayImage): GrayImage => ({ ...f, data: f.data.map((v) => 255 - v) });
const blank: GrayImage = { width: 320, height: 240, data: new Uint8Array(320 * 240) };

describe('capture stages on a synthetic palm', () => {
  it('detect: the hand covers part of the frame, the palm circle lies on it; a dark hand on the negative is the same hand', async () => {
    const frame = await palm();
    const d = runDetect(frame);
    expect(d.coverage).toBeGreaterThan(DEFAULT_QUALITY_PARAMS.minCoverage);
    expect(d.scannable).toBe(true);
    expect(d.mask[d.cy * d.located.width + d.cx]).toBe(1);
    expect(d.centres[0]).toEqual({ x: d.cx, y: d.cy });
    expect(d.palmGrey).toBeGreaterThan(d.threshold);
    const dark = runDetect(negative(frame), { ...DEFAULT_DETECT_PARAMS, darkHand: true });
    expect(dark.located.data).toEqual(d.located.data);
    expect([dark.cx, dark.cy, dark.radius]).toEqual([d.cx, d.cy, d.radius]);
    expect(runDetect(blank).coverage).toBe(0);
  });

  it('valleys: the finger-ring scan finds three valleys above the palm, fingers up; none on a blank frame', async () => {
    const d = runDetect(await palm());
    const v = runValleys(d);
    expect(v.found).not.toBeNull();
    const { valleys, up } = v.found!;
    expect(valleys).toHaveLength(3);
    // the simulator's hands stand fingers up (−y)
    expect(Math.cos(up + Math.PI / 2)).toBeGreaterThan(0.8);
    for (const p of valleys) expect(p.y).toBeLessThan(d.cy);
    expect(runValleys(runDetect(blank), DEFAULT_VALLEYS_PARAMS).found).toBeNull();
  });

  it('outline: the convexity defects give the same three valleys as the ring scan, within a few work pixels', async () => {
    const d = runDetect(await palm());
    const rings = runValleys(d).found!;
    const outline = runOutline(d);
    expect(outline).not.toBeNull();
    expect(outline!.runs).toBe(4);
    for (let i = 0; i < 3; i++) {
      const a = outline!.valleys[i]!;
      const b = rings.valleys[i]!;
      expect(Math.hypot(a.x - b.x, a.y - b.y)).toBeLessThan(0.25 * d.radius);
    }
  });

  it('ROI: placed from the valleys it is the geometry of locateHand; the crop is 128², the side decided; a cut hand is partial', async () => {
    const frame = await palm();
    const d = runDetect(frame);
    const g = placeRoi(d, runValleys(d).found, 0, DEFAULT_ROI_PARAMS);
    expect(g).toEqual(locateHand(frame, SIMULATOR_ROI));
    const r = runRoi({ frame, geometry: g });
    expect(r.roi).toHaveLength(ROI_SIZE * ROI_SIZE);
    expect(r).toMatchObject({ hand: 'right', partial: false, outside: null });
    const cut = await palm('left', 'partial');
    expect(runRoi({ frame: cut, geometry: locateHand(cut) }).partial).toBe(true);
  });

  it('quality: a good palm passes the frame, motion and focus gates with a score above the floor; a dark one is refused; the limits are the params', async () => {
    const frame = await palm();
    const geometry = locateHand(frame);
    const q = runQuality({ frame, geometry });
    expect(q.ok).toBe(true);
    const { roi } = runRoi({ frame, geometry });
    const m = runMotion(roi, q.measures);
    expect(m.ok).toBe(true);
    const s = runSharpness(await extractResponses(roi), m.measures);
    expect(s.ok).toBe(true);
    expect(qualityScore(s.measures)).toBeGreaterThan(20);
    expect(runQuality({ frame, geometry }, { ...DEFAULT_QUALITY_PARAMS, minHandMean: 255 })).toMatchObject({
      ok: false,
      reason: 'underexposed',
    });
    expect(runMotion(roi, q.measures, { ...DEFAULT_QUALITY_PARAMS, maxAnisotropy: 1 }).ok).toBe(false);
    const dark = await palm('right', 'underexposed');
    expect(runQuality({ frame: dark, geometry: locateHand(dark) })).toMatchObject({
      ok: false,
      reason: 'underexposed',
    });
  });

  it('liveness: a live palm passes on all three cues; the threshold and the cues are the params', () => {
    const live = { edgeFalloff: 0.7, periodicity: 0.1, veinContrast: 0.06 };
    const r = runLiveness(live);
    expect(r.live).toBe(true);
    expect(r.score).toBeGreaterThanOrEqual(DEFAULT_LIVENESS_PARAMS.threshold);
    expect(runLiveness(live, { ...DEFAULT_LIVENESS_PARAMS, threshold: 101 }).live).toBe(false);
    const flat = { edgeFalloff: 1, periodicity: 0.1, veinContrast: 0.06 };
    expect(runLiveness(flat).live).toBe(false);
    expect(runLiveness(flat, { ...DEFAULT_LIVENESS_PARAMS, cues: ['aperiodic', 'contrast'] }).live).toBe(
      true,
    );
  });

  it('code: the template carries the header it is given and masks the cells outside the frame', async () => {
    const frame = await palm();
    const { roi } = runRoi({ frame, geometry: locateHand(frame) });
    const responses = await extractResponses(roi);
    const outside = new Uint8Array(GRID * GRID);
    outside.fill(1, 0, GRID);
    const t = decodeTemplate(runCode({ responses, outside, hand: 'right', quality: 77, liveness: 88 }));
    expect(t).toMatchObject({ hand: 'right', quality: 77, liveness: 88 });
    expect(t.mask[0]).toBe(0);
    expect(t.mask[1]).not.toBe(0);
    const again = runCode({ responses, outside: null, hand: 'unknown', quality: 77, liveness: 88 });
    expect(decodeTemplate(again).mask[0]).not.toBe(0);
  });

  it('a sensor profile is the stages’ parameters: processCapture reads each stage’s from it', async () => {
    const frame = await palm();
    const sim = SENSOR_PROFILES.simulator;
    expect((await processCapture(frame, { sensor: sim })).ok).toBe(true);
    const strict: SensorProfile = {
      ...sim,
      stages: { ...sim.stages, quality: { ...sim.stages.quality, minHandMean: 255 } },
    };
    expect(await processCapture(frame, { sensor: strict })).toMatchObject({
      ok: false,
      reason: 'underexposed',
    });
    const picky: SensorProfile = {
      ...sim,
      stages: { ...sim.stages, liveness: { ...sim.stages.liveness, threshold: 101 } },
    };
    expect(await processCapture(frame, { sensor: picky })).toMatchObject({
      ok: false,
      reason: 'liveness_failed',
    });
    // the geometric stages follow the ROI proportions: outline-only profiles skip the ring scan
    expect(geometryStages(SENSOR_PROFILES['grey-dark'].stages.roi.proportions).valleys).toBeNull();
    expect(SENSOR_PROFILES['grey-dark'].stages.outline.centreUp).toBe(0.3);
    expect(SENSOR_PROFILES.colour.stages.outline.refine).toBe(false);
  });
});
