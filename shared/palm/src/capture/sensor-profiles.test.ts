import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { describe, expect, it } from 'vitest';
import { decodeTemplate } from '../template.ts';
import { locateHand } from './hand-geometry.ts';
import { cropPalm } from './hand-roi.ts';
import { LIVENESS_THRESHOLD, livenessScore } from './liveness.ts';
import { processCapture } from './pipeline.ts';
import { PEG_FRAME_RADIUS } from './roi-pegs.ts';
import {
  isSensorName,
  SENSOR_NAMES,
  SENSOR_PROFILES,
  sensorArg,
  sideMatters,
  withRoi,
} from './sensor-profiles.ts';

describe('sensor profiles', () => {
  it('apply no NIR cue to a visible-light sensor', () => {
    for (const n of ['contact-visible', 'grey-dark', 'grey-bright', 'colour', 'phone'] as const) {
      expect(SENSOR_PROFILES[n].stages.liveness.cues).toEqual(['aperiodic']);
      expect(SENSOR_PROFILES[n].detects).toMatch(/NOT detected/);
    }
    expect(SENSOR_PROFILES['contact-nir'].stages.liveness.cues).not.toContain('rounded');
    expect(SENSOR_PROFILES.simulator.stages.liveness.cues).toEqual(['rounded', 'aperiodic', 'contrast']);
    for (const n of SENSOR_NAMES) expect(SENSOR_PROFILES[n].name).toBe(n);
  });

  it('do not refuse a visible-light hand for the flat tonal range NIR cues read as an attack', () => {
    // a bona fide colour-camera palm: little vein-scale contrast, no NIR fall-off at the outline
    const visibleLive = { edgeFalloff: 0.9, periodicity: 0.3, veinContrast: 0.025 };
    expect(livenessScore(visibleLive)).toBeLessThan(LIVENESS_THRESHOLD);
    const colour = SENSOR_PROFILES.colour;
    expect(
      livenessScore(visibleLive, colour.stages.liveness.cues, colour.stages.liveness.centres),
    ).toBeGreaterThanOrEqual(LIVENESS_THRESHOLD);
    // a pixel-grid screen is still refused
    const screen = { ...visibleLive, periodicity: 0.85 };
    expect(livenessScore(screen, colour.stages.liveness.cues, colour.stages.liveness.centres)).toBeLessThan(
      LIVENESS_THRESHOLD,
    );
  });

  it('reach the pipeline: every profile enrols a live hand, and the simulator profile refuses a print', async () => {
    const spec = { identity: 'sensor-1', hand: 'right' as const, capture: 2 };
    const live = await renderPalm(spec);
    // grey-bright expects the hand darker than its background: the same frame as a negative
    const negative = { ...live, data: live.data.map((v) => 255 - v) };
    for (const sensor of SENSOR_NAMES) {
      const r = await processCapture(sensor === 'grey-bright' ? negative : live, { sensor });
      expect(r.ok, `${sensor}: ${r.ok ? '' : r.reason}`).toBe(true);
      // the template says which scales it codes: the print profiles measured on real palms code `fine`
      const coding = r.ok ? decodeTemplate(r.template).coding : null;
      expect(coding, sensor).toBe(sensor === 'grey-dark' || sensor === 'colour' ? 'fine' : 'wide');
    }
    expect(await processCapture(live, { sensor: 'grey-bright' })).toMatchObject({ ok: false });
    const print = await renderPalm({ ...spec, attack: 'print' });
    expect(await processCapture(print, { sensor: 'simulator' })).toMatchObject({ ok: false });
  }, 60_000);

  it('keep the NIR cues of real NIR sensors on the bona fide side of every capture seen', () => {
    // the weakest bona fide NIR-like measures seen (simulator's contact and contactless renders)
    const weakLive = { edgeFalloff: 0.95, periodicity: 0.08, veinContrast: 0.009 };
    for (const n of ['contact-nir', 'contactless-nir'] as const) {
      const p = SENSOR_PROFILES[n];
      expect(
        livenessScore(weakLive, p.stages.liveness.cues, p.stages.liveness.centres),
      ).toBeGreaterThanOrEqual(LIVENESS_THRESHOLD);
      // a flat, tonally crushed medium with a pixel grid is still refused
      const flat = { edgeFalloff: 1.05, periodicity: 0.8, veinContrast: 0.004 };
      expect(livenessScore(flat, p.stages.liveness.cues, p.stages.liveness.centres)).toBeLessThan(
        LIVENESS_THRESHOLD,
      );
    }
  });

  it('crop peg-held hands on the palm along the hand, and never mirror camera crops', async () => {
    const frame = await renderPalm({ identity: 'sensor-2', hand: 'left', capture: 1 });
    const g = locateHand(frame, SENSOR_PROFILES.colour.stages.roi.proportions);
    expect(g.roi).toBeDefined();
    // the simulator's hand stands fingers up; the peg ROI follows its axis (roi-pegs.test.ts)
    expect(
      Math.abs(Math.atan2(Math.sin(g.roi!.up + Math.PI / 2), Math.cos(g.roi!.up + Math.PI / 2))),
    ).toBeLessThan(0.5);
    // the colour camera's scale is the device's (a share of the frame) blended halfway with the
    // hand's; contact scanners keep the hand's inscribed radius
    const short = Math.min(frame.width, frame.height);
    expect(g.roi!.side / (0.26 * short * Math.sqrt(g.radius / (PEG_FRAME_RADIUS * short)))).toBeCloseTo(1, 2);
    expect(Math.hypot(g.roi!.cx - g.cx, g.roi!.cy - g.cy)).toBeLessThan(g.radius);
    const contact = locateHand(frame, SENSOR_PROFILES['contact-visible'].stages.roi.proportions);
    expect(contact.roi!.side).toBeCloseTo(1.2 * contact.radius, 6);
    for (const n of SENSOR_NAMES)
      expect(SENSOR_PROFILES[n].stages.roi.proportions.mirrorLeft === true).toBe(n === 'simulator');
    // a left hand's camera crop is its own mirror image of the simulator's crop of the same square
    const sim = locateHand(frame, SENSOR_PROFILES['grey-dark'].stages.roi.proportions);
    const plain = cropPalm(frame, sim, false);
    const mirrored = cropPalm(frame, sim, true);
    expect(sim.hand).toBe('left');
    expect(mirrored[5 * 128 + 3]).toBeCloseTo(plain[5 * 128 + 124]!, 3);
  });

  it('accept an undecided hand side only where the crop is not mirrored; camera templates carry no side', () => {
    for (const n of SENSOR_NAMES) {
      const p = SENSOR_PROFILES[n];
      // only the simulator mirrors left hands, so only its side matters (and narrows the 1:N search)
      expect(sideMatters(p)).toBe(n === 'simulator');
      expect(sideMatters(withRoi(p, { ...p.stages.roi.proportions, mirrorLeft: true }))).toBe(true);
      expect(sideMatters(withRoi(p, { ...p.stages.roi.proportions, mirrorLeft: false }))).toBe(false);
    }
  });

  it('parse --sensor values', () => {
    expect(isSensorName('phone')).toBe(true);
    expect(isSensorName('scanner')).toBe(false);
    expect(sensorArg('contact-nir')).toBe('contact-nir');
    expect(() => sensorArg('scanner')).toThrow(/unknown sensor profile "scanner"/);
  });
});
