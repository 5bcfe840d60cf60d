import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../e2e/harness.ts';
import { campaignSize } from '../support/campaign-size.ts';
import { applyTamper, type Golden, makeGolden, runTamperCampaign, type Tamper } from './tamper-campaign.ts';

/** Fast variant; the bench runs thousands of cases (`npm run bench -- reliability`). TAMPER_RUNS overrides. */
describe('audit log tampering', () => {
  let golden: Golden;
  beforeAll(async () => {
    golden = await makeGolden();
  });
  afterAll(() => golden?.remove());

  it('the untouched copy verifies', async () => {
    const copy = join(golden.dir, 'clean.db');
    copyFileSync(golden.db, copy);
    const out = await run('server/src/cli/admin.ts', ['audit', 'verify'], {
      DATABASE_URL: `sqlite:${copy}`,
      PALMID_KEY_FILE: golden.key,
    });
    expect(out).toMatch(new RegExp(`intact: ${golden.rows} record`));
  }, 60_000);

  it('every flipped byte, deleted, swapped, edited, forged or re-chained row is detected', async () => {
    const figures = await runTamperCampaign(golden, { runs: campaignSize('TAMPER_RUNS', 300) });
    expect(figures.detected).toBe(figures.cases);
    expect(Object.keys(figures.byKind).length).toBeGreaterThanOrEqual(7);
  }, 120_000);

  it('`admin audit verify` (as a process) exits 1 on tampering', async () => {
    const cases: Tamper[] = [
      { kind: 'flip', row: 3, column: 'user_agent', pos: 2, xor: 1 },
      { kind: 'delete-rehash', row: 5 },
    ];
    for (const [i, t] of cases.entries()) {
      const copy = join(golden.dir, `cli-${i}.db`);
      copyFileSync(golden.db, copy);
      expect(applyTamper(copy, t)).toBe(true);
      const err = await run('server/src/cli/admin.ts', ['audit', 'verify'], {
        DATABASE_URL: `sqlite:${copy}`,
        PALMID_KEY_FILE: golden.key,
      }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message, JSON.stringify(t)).toMatch(/exited 1/);
    }
  }, 120_000);
});
