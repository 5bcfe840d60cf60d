import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { describe, expect, it } from 'vitest';
import { decodeTemplate, GRID, popcount32 } from '../template.ts';
import { encodeResponses, MASK_KEEP } from './coding.ts';
import { ORIENTATIONS, SCALES } from './gabor.ts';
import { type HandGeometry, locateHand } from './hand-geometry.ts';
import { OUTSIDE_REACH, roiOutsideCells } from './hand-roi.ts';
import { FEATURE_GRID, ROI_SIZE } from './model-graph.ts';
import { processCapture } from './pipeline.ts';
import { SENSOR_PROFILES, type SensorProfile, withRoi } from './sensor-profiles.ts';

/**
 * Real cameras cut the palm (docs/palm-pipeline.md, "Capture path on real hands"): a camera
 * profile keeps an ROI square that overhangs the frame when enough of it is inside, and masks the
 * template cells whose filters would read beyond the edge.
 */
const greyDark = SENSOR_PROFILES['grey-dark'];
/** grey-dark with the square pushed `centreBelow` sides away from the finger valleys */
const pushed = (centreBelow: number): SensorProfile =>
  withRoi(greyDark, { ...greyDark.stages.roi.proportions, centreBelow });

const masked = (mask: Uint32Array, i: number) => ((mask[i >> 5]! >>> (i & 31)) & 1) === 0;

describe('ROI square overhanging the frame', () => {
  it('enrols under a camera profile with the cells beyond the edge masked; the simulator rule refuses it', async () => {
    const frame = await renderPalm({
      identity: 'ov-1',
      hand: 'right',
      capture: 1,
      width: 320,
      height: 240,
      sensor: 'grey-dark',
    });
    // the same valleys, the square moved towards the wrist until it leaves the frame
    const profile = pushed(1.4);
    const g = locateHand(frame, profile.stages.roi.proportions);
    expect(g.roiInside).toBeGreaterThan(greyDark.stages.roi.proportions.minInside!);
    expect(g.roiInside).toBeLessThan(0.97);
    expect(g.touchesEdge).toBe(false);
    const r = await processCapture(frame, { sensor: profile });
    expect(r.ok, r.ok ? '' : r.reason).toBe(true);
    if (!r.ok) return;
    const outside = roiOutsideCells(frame, g, false);
    expect(outside).not.toBeNull();
    const flagged = outside!.reduce((a, v) => a + v, 0);
    // the overhang (1 − roiInside of the square) plus the filters' reach
    expect(flagged / (GRID * GRID)).toBeGreaterThan(1 - g.roiInside!);
    const { mask } = decodeTemplate(r.template);
    for (let i = 0; i < GRID * GRID; i++) if (outside![i]) expect(masked(mask, i)).toBe(true);
    // the reliable share is taken of the cells inside
    const usable = mask.reduce((a, w) => a + popcount32(w), 0);
    expect(Math.abs(usable - MASK_KEEP * (GRID * GRID - flagged))).toBeLessThanOrEqual(2);
    // without minInside (the simulator's rule) the same square counts as partial
    const { minInside: _, ...strictRoi } = profile.stages.roi.proportions;
    const strict = await processCapture(frame, { sensor: withRoi(profile, strictRoi) });
    expect(strict).toMatchObject({ ok: false, reason: 'partial' });
  }, 60_000);

  it('still refuses a palm with too little of its square in view as partial', async () => {
    const frame = await renderPalm({
      identity: 'ov-1',
      hand: 'right',
      capture: 1,
      width: 320,
      height: 240,
      sensor: 'grey-dark',
    });
    const profile = pushed(1.9);
    const g = locateHand(frame, profile.stages.roi.proportions);
    expect(g.up).not.toBeNull();
    expect(g.roiInside).toBeLessThan(greyDark.stages.roi.proportions.minInside!);
    expect(g.touchesEdge).toBe(true);
    expect(await processCapture(frame, { sensor: profile })).toMatchObject({ ok: false, reason: 'partial' });
  }, 60_000);

  it('flags exactly the cells within the filters’ reach of the edge, none for a square well inside', () => {
    const frame = { width: 200, height: 200 };
    const square = (cx: number, side: number) =>
      ({
        radius: side / 1.5,
        cx,
        cy: 100,
        up: -Math.PI / 2,
        roi: { cx, cy: 100, side, up: -Math.PI / 2 },
      }) as HandGeometry;
    expect(roiOutsideCells(frame, square(100, 128), false)).toBeNull();
    // side 128 px: one ROI pixel per frame pixel; the square spans x 136 … 264, the frame ends at 199
    const out = roiOutsideCells(frame, square(200, 128), false)!;
    for (let c = 0; c < FEATURE_GRID; c++) {
      // cell centre x = 136 + 4c + 1 (fingers up: columns run along +x)
      const x = 136 + (ROI_SIZE / FEATURE_GRID) * c + 1;
      const expected = x > 199 - OUTSIDE_REACH ? 1 : 0;
      for (let r = 0; r < FEATURE_GRID; r++) expect(out[r * FEATURE_GRID + c]).toBe(expected);
    }
  });

  it('keeps the reliable share of the usable cells and never marks an unusable one', () => {
    const cells = GRID * GRID;
    const responses = new Float32Array(SCALES.length * ORIENTATIONS * cells);
    // orientation 0 wins everywhere, by a margin that grows with the cell index
    for (let s = 0; s < SCALES.length; s++)
      for (let i = 0; i < cells; i++) responses[s * ORIENTATIONS * cells + i] = -1 - i / cells;
    const unusable = new Uint8Array(cells);
    for (let i = cells - 256; i < cells; i++) unusable[i] = 1;
    const { mask } = encodeResponses(responses, 0, 0.5, unusable);
    let kept = 0;
    for (let i = 0; i < cells; i++) {
      if (!masked(mask, i)) kept++;
      if (unusable[i]) expect(masked(mask, i)).toBe(true);
    }
    expect(kept).toBe(384);
  });
});
