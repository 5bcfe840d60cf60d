import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderRoi } from '@palmid/firmware-sim/synth/roi.ts';
import { MATCH_THRESHOLD } from '@palmid/shared/palm/threshold.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractRoiTemplate } from '../../../../agent/src/palm/roi-template.ts';
import { closeContext, createContext } from '../../bootstrap.ts';
import { ConfigError, loadConfig } from '../../config.ts';

/** PALMID_MATCH_THRESHOLD reaches the server's own matcher and gallery (README, configuration). */
describe('PALMID_MATCH_THRESHOLD', () => {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-threshold-'));
  let enrolled: Uint8Array;
  let probe: Uint8Array;
  beforeAll(async () => {
    enrolled = await extractRoiTemplate(
      renderRoi({ identity: 't1', style: 'contact', session: 1, sample: 0 }),
    );
    probe = await extractRoiTemplate(renderRoi({ identity: 't1', style: 'contact', session: 2, sample: 1 }));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function scoreWith(env: Record<string, string>) {
    const config = loadConfig({
      DATABASE_URL: `sqlite:${join(dir, `${Object.keys(env).length}.db`)}`,
      PALMID_KEY_FILE: join(dir, 'master.key'),
      ...env,
    });
    const ctx = await createContext(config);
    try {
      ctx.gallery.add({ palmId: 'p1', userId: 'u1', hand: 'right', template: enrolled });
      return {
        threshold: config.PALMID_MATCH_THRESHOLD,
        verify: ctx.matcher.verify(enrolled, probe),
        hit: ctx.gallery.identify(probe),
      };
    } finally {
      await closeContext(ctx);
    }
  }

  it('defaults to the calibrated constant; a raised threshold refuses what the default accepts, 1:1 and 1:N', async () => {
    const base = await scoreWith({});
    expect(base.threshold).toBe(MATCH_THRESHOLD);
    expect(base.verify.match).toBe(true);
    expect(base.hit?.userId).toBe('u1');
    // just above this genuine pair's score: the same palms no longer match anywhere
    const above = Math.min(0.95, Math.ceil((base.verify.score + 0.001) * 1000) / 1000);
    const raised = await scoreWith({ PALMID_MATCH_THRESHOLD: String(above) });
    expect(raised.threshold).toBe(above);
    expect(raised.verify).toEqual({ score: base.verify.score, match: false });
    expect(raised.hit).toBeNull();
  });

  it('refuses a value below the calibrated default or not a number, naming the key', () => {
    for (const bad of [String(MATCH_THRESHOLD - 0.01), '0.99', 'high'])
      expect(() => loadConfig({ PALMID_MATCH_THRESHOLD: bad })).toThrow(ConfigError);
    expect(() => loadConfig({ PALMID_MATCH_THRESHOLD: '0.2' })).toThrow(
      /PALMID_MATCH_THRESHOLD: must be at least/,
    );
  });
});
