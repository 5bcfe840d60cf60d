import { renderPalm, type Sensor } from '@palmid/firmware-sim/synth/index';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { compareTemplates } from '@palmid/palm/match';
import { describe, expect, it } from 'vitest';

/**
 * The capture pipeline on renders that look like real sensors' captures (firmware-sim
 * realistic.ts), each under the sensor profile of the same name: what the field will send, as far
 * as the simulator can show it (docs/palm-pipeline.md, "Realistic renders against real captures").
 */
describe('capture pipeline on realistic renders', () => {
  const sensors: Sensor[] = ['grey-dark', 'colour', 'contact-nir', 'contact-visible', 'contactless-nir'];

  it.each(sensors)(
    '%s: bona fide frames enrol and the same palm scores above other palms',
    async (sensor) => {
      const enrolled: Array<{ id: string; template: Uint8Array }> = [];
      const refused: string[] = [];
      for (const id of ['ci1', 'ci2', 'ci3'])
        for (const capture of [1, 2]) {
          const frame = await renderPalm({
            identity: id,
            hand: 'right',
            capture,
            width: 320,
            height: 240,
            sensor,
          });
          const r = await processCapture(frame, { sensor });
          if (r.ok) enrolled.push({ id, template: r.template });
          else refused.push(r.reason);
        }
      expect(enrolled.length, `refused: ${refused.join(', ')}`).toBeGreaterThanOrEqual(5);
      const genuine: number[] = [];
      const impostor: number[] = [];
      for (let i = 0; i < enrolled.length; i++)
        for (let j = i + 1; j < enrolled.length; j++) {
          const score = compareTemplates(enrolled[i]!.template, enrolled[j]!.template);
          (enrolled[i]!.id === enrolled[j]!.id ? genuine : impostor).push(score);
        }
      genuine.sort((a, b) => a - b);
      expect(genuine.length).toBeGreaterThanOrEqual(2);
      expect(genuine[genuine.length >> 1]!).toBeGreaterThan(Math.max(...impostor));
    },
    120_000,
  );
});
