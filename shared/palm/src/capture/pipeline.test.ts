import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { describe, expect, it } from 'vitest';
import { sideless } from '../../../../test/support/sideless-hand.ts';
import { decodeTemplate } from '../template.ts';
import { locateHand } from './hand-geometry.ts';
import { LIVENESS_THRESHOLD, processCapture } from './pipeline.ts';
import { SENSOR_PROFILES, type SensorProfile, withRoi } from './sensor-profiles.ts';

describe('processCapture', () => {
  it('turns a good frame into a template with hand, quality and liveness', async () => {
    for (const hand of ['left', 'right'] as const) {
      const r = await processCapture(await renderPalm({ identity: 'pipe-1', hand, capture: 3 }));
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      expect(r.hand).toBe(hand);
      const t = decodeTemplate(r.template);
      expect(t.hand).toBe(hand);
      expect(t.quality).toBe(r.quality);
      expect(r.liveness).toBeGreaterThanOrEqual(LIVENESS_THRESHOLD);
    }
  });

  it('says why a frame is unusable', async () => {
    const frame = (condition: 'too_far' | 'overexposed' | 'underexposed') =>
      renderPalm({ identity: 'pipe-2', hand: 'right', capture: 1, condition });
    expect(await processCapture(await frame('too_far'))).toMatchObject({ ok: false, reason: 'too_far' });
    expect(await processCapture(await frame('overexposed'))).toMatchObject({
      ok: false,
      reason: 'overexposed',
    });
    expect(await processCapture(await frame('underexposed'))).toMatchObject({
      ok: false,
      reason: 'underexposed',
    });
    // the hand pushed sideways out of the frame: fingers or thumb cut off
    for (const capture of [1, 2]) {
      const cut = await renderPalm({ identity: 'pipe-2', hand: 'left', capture, condition: 'partial' });
      expect(await processCapture(cut)).toMatchObject({ ok: false, reason: 'partial' });
    }
    const black = { width: 320, height: 240, data: new Uint8Array(320 * 240) };
    expect(await processCapture(black)).toMatchObject({ ok: false, reason: 'no_hand' });
    expect(await processCapture({ width: 320, height: 240, data: new Uint8Array(10) })).toMatchObject({
      ok: false,
    });
  });

  it('rejects printed and screen presentation attacks', async () => {
    for (const attack of ['print', 'screen'] as const) {
      const r = await processCapture(
        await renderPalm({ identity: 'pipe-3', hand: 'right', capture: 4, attack }),
      );
      expect(r.ok).toBe(false);
    }
  });

  it('reports the side on camera profiles but leaves it out of the template, which is then searched among both hands', async () => {
    const frame = await renderPalm({
      identity: 'pipe-4',
      hand: 'left',
      capture: 2,
      sensor: 'grey-dark',
      width: 320,
      height: 240,
    });
    const r = await processCapture(frame, { sensor: 'grey-dark' });
    expect(r).toMatchObject({ ok: true, hand: 'left' });
    if (!r.ok) return;
    expect(decodeTemplate(r.template).hand).toBe('unknown');
    // a profile whose side matters (its crop mirrors left hands) writes it
    const greyDark = SENSOR_PROFILES['grey-dark'];
    const sided = await processCapture(frame, {
      sensor: withRoi(greyDark, { ...greyDark.stages.roi.proportions, mirrorLeft: true }),
    });
    expect(sided.ok && decodeTemplate(sided.template).hand).toBe('left');
  }, 30_000);

  it('accepts a hand of undecided side as `unknown` on camera profiles, and the simulator refuses it', async () => {
    const camera = await sideless('grey-dark');
    const g = locateHand(camera, SENSOR_PROFILES['grey-dark'].stages.roi.proportions);
    // the valleys and the square are found, the side is not
    expect(g.up).not.toBeNull();
    expect(g.touchesEdge).toBe(false);
    expect(g.hand).toBeNull();
    expect(g.cues).toEqual({ mass: 0, web: 0, fingers: 0 });
    const r = await processCapture(camera, { sensor: 'grey-dark' });
    expect(r.ok, r.ok ? '' : r.reason).toBe(true);
    if (!r.ok) return;
    expect(r.hand).toBe('unknown');
    expect(decodeTemplate(r.template).hand).toBe('unknown');
    // the same frame under a profile whose side matters (it mirrors left hands) is refused
    const greyDark = SENSOR_PROFILES['grey-dark'];
    const mirroring: SensorProfile = withRoi(greyDark, {
      ...greyDark.stages.roi.proportions,
      mirrorLeft: true,
    });
    expect(await processCapture(camera, { sensor: mirroring })).toMatchObject({
      ok: false,
      reason: 'partial',
    });

    // the simulator mirrors left hands: a frame of its own without a side cue is refused
    const sim = await sideless('simulator');
    const gs = locateHand(sim, SENSOR_PROFILES.simulator.stages.roi.proportions);
    expect(gs.up).not.toBeNull();
    expect(gs.touchesEdge).toBe(false);
    expect(gs.hand).toBeNull();
    expect(await processCapture(sim)).toMatchObject({ ok: false, reason: 'partial' });
    // and only for its side: without the mirroring it would pass
    const simulator = SENSOR_PROFILES.simulator;
    const unmirrored: SensorProfile = withRoi(simulator, {
      ...simulator.stages.roi.proportions,
      mirrorLeft: false,
    });
    expect(await processCapture(sim, { sensor: unmirrored })).toMatchObject({ ok: true, hand: 'unknown' });
  }, 60_000);
});
