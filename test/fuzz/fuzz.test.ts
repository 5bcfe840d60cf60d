import { describe, expect, it } from 'vitest';
import { runRestFuzz } from './rest-campaign.ts';
import { runWsFuzz } from './ws-campaign.ts';

/**
 * Fast variants of the fuzz campaigns (the bench runs them longer: `npm run bench -- reliability`).
 * FUZZ_RUNS raises the number of cases per route / channel.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 0);

describe('fuzzing', () => {
  it('every REST route answers hostile input with < 500 and a SPEC envelope, without leaking internals', async () => {
    const figures = await runRestFuzz({ runsPerRoute: RUNS || 25 });
    expect(figures.routes).toBeGreaterThanOrEqual(30);
    expect(figures.cases).toBe(figures.routes * (RUNS || 25));
    expect(Object.keys(figures.byStatus).every((s) => Number(s) < 500)).toBe(true);
  }, 120_000);

  it('every WebSocket method answers hostile frames with a valid response frame and keeps the socket', async () => {
    const figures = await runWsFuzz({ runsPerChannel: RUNS || 150 });
    expect(figures.frames).toBe(2 * (RUNS || 150));
    expect(figures.errors.INTERNAL_ERROR).toBeUndefined();
  }, 120_000);
});
