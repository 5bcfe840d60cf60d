import { describe, expect, it } from 'vitest';
import { seededUniform } from '../../../../test/support/seeded.ts';
import { sharedExtractor } from './extractor.ts';
import { FEATURE_CHANNELS, FEATURE_GRID, ROI_SIZE } from './model-graph.ts';

describe('FeatureExtractor.responses', () => {
  it('gives one ROI fed as it is the same responses as in a batch, and leaves it unchanged', async () => {
    const roi = (seed: number) => {
      const next = seededUniform(seed);
      return Float32Array.from(
        { length: ROI_SIZE * ROI_SIZE },
        (_, i) => 60 + Math.floor(next() * 128) + 40 * Math.sin(i / 7),
      );
    };
    const a = roi(1);
    const b = roi(2);
    const before = a.slice();
    const ex = await sharedExtractor();
    const one = (await ex.responses([a])).slice();
    const batch = await ex.responses([b, a]);
    const per = FEATURE_CHANNELS * FEATURE_GRID * FEATURE_GRID;
    expect(one.length).toBe(per);
    expect(Buffer.from(one.buffer).equals(Buffer.from(batch.slice(per, 2 * per).buffer))).toBe(true);
    expect(Buffer.from(a.buffer).equals(Buffer.from(before.buffer))).toBe(true);
    expect(one.some((v) => v !== 0)).toBe(true);
  });
});
