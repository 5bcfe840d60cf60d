import { describe, expect, it } from 'vitest';
import { campaignSize } from '../support/campaign-size.ts';
import { runCrashCampaign } from './campaign.ts';
import { runServerKills } from './server-kill.ts';

/**
 * Fast variants (the bench runs 1,000 writer kills and more server kills: `npm run bench -- reliability`).
 * CRASH_KILLS / CRASH_SERVER_KILLS override the counts (docs/testing.md).
 */
describe('crash safety (SIGKILL while writing)', () => {
  it('200 kills of a writer on the real store: integrity_check ok, audit chain intact, no acknowledged write lost', async () => {
    const kills = campaignSize('CRASH_KILLS', 200);
    const figures = await runCrashCampaign({ kills });
    expect(figures.kills).toBe(kills);
    expect(figures.acknowledged).toBeGreaterThan(0);
    expect(Object.keys(figures.byKind).sort()).toEqual(['attr', 'auth', 'consent']);
  }, 600_000);

  it('full server kills while HTTP clients write: every 2xx-acknowledged write is readable after restart', async () => {
    const kills = campaignSize('CRASH_SERVER_KILLS', 1);
    const figures = await runServerKills({ kills });
    expect(figures.kills).toBe(kills);
    expect(figures.acknowledged).toBeGreaterThan(0);
    expect(figures.byKind.create).toBeGreaterThan(0);
  }, 600_000);
});
