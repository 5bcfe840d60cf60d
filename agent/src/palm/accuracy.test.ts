import { renderPalm } from '@palmid/firmware-sim/synth/index.ts';
import { renderRoi } from '@palmid/firmware-sim/synth/roi.ts';
import { packedDistance, packTemplate } from '@palmid/shared/palm/match.ts';
import { decodeTemplate } from '@palmid/shared/palm/template.ts';
import { describe, expect, it } from 'vitest';
import { errorRates } from './eval/metrics.ts';
import { processCapture } from './pipeline.ts';
import { extractRoiTemplate } from './roi-template.ts';

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
