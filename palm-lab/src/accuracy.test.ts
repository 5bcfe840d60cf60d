import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { renderRoi } from '@palmid/firmware-sim/synth/roi';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { extractRoiTemplate } from '@palmid/palm/capture/roi-template';
import { packedDistance, packedDistanceJs, packTemplate, TILE_SMOOTHNESS } from '@palmid/palm/match';
import { decodeTemplate } from '@palmid/palm/template';
import { describe, expect, it } from 'vitest';
import { errorRates } from './eval/metrics.ts';

/**
 * Small end-to-end accuracy checks (the full numbers come from `npm run palm -- eval`, see
 * docs/palm-pipeline.md). Bounds are loose enough for a 10-identity sample, tight enough that a
 * broken stage (ROI, filters, coding, matching) fails them.
 */
const EER_BOUND_ROI = 0.03;
const EER_BOUND_FRAMES = 0.05;

function scores(templates: Array<{ subject: number; t: Uint8Array }>) {
  const packed = templates.map((x) => ({ subject: x.subject, p: packTemplate(decodeTemplate(x.t)) }));
  const genuine: number[] = [];
  const impostor: number[] = [];
  for (let i = 0; i < packed.length; i++) {
    for (let j = i + 1; j < packed.length; j++) {
      const d = packedDistance(packed[i]!.p, 0, packed[j]!.p, 0);
      (packed[i]!.subject === packed[j]!.subject ? genuine : impostor).push(d);
    }
  }
  return errorRates(genuine, impostor);
}

describe('accuracy on small synthetic sets', () => {
  it(`ROI input (two sessions, contact style): EER ≤ ${EER_BOUND_ROI * 100} %`, async () => {
    const templates: Array<{ subject: number; t: Uint8Array }> = [];
    for (let s = 0; s < 10; s++) {
      for (const session of [1, 2] as const) {
        for (let k = 0; k < 2; k++) {
          const img = renderRoi({ identity: `acc-roi-${s}`, style: 'contact', session, sample: k });
          templates.push({ subject: s, t: await extractRoiTemplate(img) });
        }
      }
    }
    expect(scores(templates).eer).toBeLessThanOrEqual(EER_BOUND_ROI);
  });

  it('the tile search smoothness penalty separates impostors from genuine pairs (contactless ROIs)', async () => {
    const packed: Array<{ subject: number; p: Uint32Array }> = [];
    for (let s = 0; s < 8; s++)
      for (const session of [1, 2] as const)
        for (let k = 0; k < 2; k++) {
          const img = renderRoi({ identity: `acc-smooth-${s}`, style: 'contactless', session, sample: k });
          packed.push({ subject: s, p: packTemplate(decodeTemplate(await extractRoiTemplate(img))) });
        }
    const stats = (smoothness: number) => {
      const g: number[] = [];
      const im: number[] = [];
      for (let i = 0; i < packed.length; i++)
        for (let j = i + 1; j < packed.length; j++)
          (packed[i]!.subject === packed[j]!.subject ? g : im).push(
            packedDistanceJs(packed[i]!.p, 0, packed[j]!.p, 0, 4, smoothness),
          );
      const mean = (v: number[]) => v.reduce((x, y) => x + y, 0) / v.length;
      const sd = (v: number[]) => Math.sqrt(mean(v.map((x) => (x - mean(v)) ** 2)));
      return {
        genuine: mean(g),
        impostor: mean(im),
        dprime: (mean(im) - mean(g)) / Math.sqrt((sd(im) ** 2 + sd(g) ** 2) / 2),
      };
    };
    const free = stats(0);
    const smooth = stats(TILE_SMOOTHNESS);
    // impostors pay for their rough shift fields, genuine pairs (one smooth deformation) far less
    expect(smooth.impostor - free.impostor).toBeGreaterThan(0.05);
    expect(smooth.genuine - free.genuine).toBeLessThan((smooth.impostor - free.impostor) / 2);
    expect(smooth.dprime).toBeGreaterThan(free.dprime);
  });

  it(`whole frames through processCapture: EER ≤ ${EER_BOUND_FRAMES * 100} %`, async () => {
    const templates: Array<{ subject: number; t: Uint8Array }> = [];
    for (let s = 0; s < 6; s++) {
      for (let c = 1; c <= 3; c++) {
        const r = await processCapture(
          await renderPalm({ identity: `acc-frame-${s}`, hand: 'right', capture: c }),
        );
        if (r.ok) templates.push({ subject: s, t: r.template });
      }
    }
    expect(templates.length).toBeGreaterThanOrEqual(15);
    expect(scores(templates).eer).toBeLessThanOrEqual(EER_BOUND_FRAMES);
  });
});
