import { describe, expect, it } from 'vitest';
import { campaignSize } from '../support/campaign-size.ts';
import { runRestFuzz } from './rest-campaign.ts';
import { runWsFuzz } from './ws-campaign.ts';

/**
 * Fast variants of the fuzz campaigns (the bench runs them longer: `npm run bench -- reliability`).
 * FUZZ_RUNS sets the number of cases per route and per channel (by default 25 per REST route and 150 per
 * WebSocket channel; docs/testing.md).
 */
const REST_RUNS = campaignSize('FUZZ_RUNS', 25);
const WS_RUNS = campaignSize('FUZZ_RUNS', 150);

describe('fuzzing', () => {
  it('every REST route answers hostile input with < 500 and a SPEC envelope, without leaking internals', async () => {
    const figures = await runRestFuzz({ runsPerRoute: REST_RUNS });
    expect(figures.routes).toBeGreaterThanOrEqual(30);
    expect(figures.cases).toBe(figures.routes * REST_RUNS);
    expect(Object.keys(figures.byStatus).every((s) => Number(s) < 500)).toBe(true);
  }, 120_000);

  it('every WebSocket method answers hostile frames with a valid response frame and keeps the socket', async () => {
    const figures = await runWsFuzz({ runsPerChannel: WS_RUNS });
    expect(figures.frames).toBe(2 * WS_RUNS);
    expect(figures.errors.INTERNAL_ERROR).toBeUndefined();
  }, 120_000);
});
