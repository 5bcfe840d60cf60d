import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { describe, expect, it } from 'vitest';
import { measureFrame } from './capture-checks.ts';
import { locateHand } from './hand-geometry.ts';
import { CUE_CAP, LIVENESS_THRESHOLD, livenessCues, livenessScore } from './liveness.ts';
import { processCapture } from './pipeline.ts';

const spec = (i: number) => ({
  identity: `liveness-test-${i}`,
  hand: i % 2 ? ('left' as const) : ('right' as const),
  capture: i,
});

describe('liveness (presentation-attack detection)', () => {
  it('passes live captures and refuses print and screen attacks through processCapture', async () => {
    for (let i = 0; i < 3; i++) {
      const live = await processCapture(await renderPalm(spec(i)));
      expect(live).toMatchObject({ ok: true });
      if (live.ok) expect(live.liveness).toBeGreaterThanOrEqual(LIVENESS_THRESHOLD);
      for (const attack of ['print', 'screen'] as const) {
        const r = await processCapture(await renderPalm({ ...spec(i), attack }));
        expect(r).toMatchObject({ ok: false, reason: 'liveness_failed' });
        if (!r.ok) expect(r.measures?.veinContrast).toBeLessThan(live.ok ? live.measures.veinContrast : 1);
      }
    }
  }, 60_000);

  it('measures vein-scale contrast free of gain and scale', async () => {
    const small = await renderPalm(spec(7));
    const big = await renderPalm({ ...spec(7), width: 640, height: 480 });
    const dim = { ...small, data: small.data.map((v) => Math.round(v * 0.6)) };
    const vc = (f: typeof small) => measureFrame(f, locateHand(f)).veinContrast;
    const base = vc(small);
    expect(base).toBeGreaterThan(0.04);
    expect(Math.abs(vc(dim) / base - 1)).toBeLessThan(0.1);
    expect(Math.abs(vc(big) / base - 1)).toBeLessThan(0.25);
  }, 60_000);

  it('lets no single cue buy off a clear failure of another', () => {
    const flatButContrasty = { edgeFalloff: 0.98, periodicity: 0, veinContrast: 0.2 };
    expect(livenessCues(flatButContrasty).contrast).toBeGreaterThan(CUE_CAP);
    expect(livenessScore(flatButContrasty)).toBeLessThan(LIVENESS_THRESHOLD);
    const typicalLive = { edgeFalloff: 0.78, periodicity: 0.18, veinContrast: 0.057 };
    expect(livenessScore(typicalLive)).toBeGreaterThan(90);
    const compressed = { ...typicalLive, veinContrast: 0.033 };
    expect(livenessScore(compressed)).toBeLessThan(LIVENESS_THRESHOLD);
  });
});
