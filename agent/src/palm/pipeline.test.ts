import { renderPalm } from '@palmid/firmware-sim/synth/index.ts';
import { decodeTemplate } from '@palmid/shared/palm/template.ts';
import { describe, expect, it } from 'vitest';
import { LIVENESS_THRESHOLD, processCapture } from './pipeline.ts';

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
});
