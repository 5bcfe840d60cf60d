import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderRoi } from '@palmid/firmware-sim/synth/roi';
import { extractRoiTemplate } from '@palmid/palm/capture/roi-template';
import { DEFAULT_TARGET_FPIR, decisionBar } from '@palmid/palm/decision';
import { MATCH_THRESHOLD } from '@palmid/palm/threshold';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

  let runs = 0;
  async function scoreWith(env: Record<string, string>) {
    const config = loadConfig({
      DATABASE_URL: `sqlite:${join(dir, `${++runs}.db`)}`,
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
        duplicate: ctx.gallery.findDuplicate(probe),
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
    // the duplicate-enrolment check keeps the calibrated default: one palm is still one account
    expect(base.duplicate?.userId).toBe('u1');
    expect(raised.duplicate?.userId).toBe('u1');
  });

  it('is read from a PALMID_CONFIG file like every key, and accepts both ends of its range', async () => {
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ PALMID_MATCH_THRESHOLD: 0.41 }));
    expect(loadConfig({ PALMID_CONFIG: file }).PALMID_MATCH_THRESHOLD).toBe(0.41);
    writeFileSync(file, JSON.stringify({ PALMID_MATCH_THRESHOLD: 0.2 }));
    expect(() => loadConfig({ PALMID_CONFIG: file })).toThrow(/PALMID_MATCH_THRESHOLD: must be at least/);
    expect(loadConfig({ PALMID_MATCH_THRESHOLD: String(MATCH_THRESHOLD) }).PALMID_MATCH_THRESHOLD).toBe(
      MATCH_THRESHOLD,
    );
    expect(loadConfig({ PALMID_MATCH_THRESHOLD: '0.95' }).PALMID_MATCH_THRESHOLD).toBe(0.95);
    expect(loadConfig({ PALMID_MATCH_THRESHOLD: '' }).PALMID_MATCH_THRESHOLD).toBe(MATCH_THRESHOLD);
  });

  it('refuses a value below the calibrated default, above 0.95 or not a number, naming the key', () => {
    for (const bad of [String(MATCH_THRESHOLD - 0.01), '0.99', 'high'])
      expect(() => loadConfig({ PALMID_MATCH_THRESHOLD: bad })).toThrow(ConfigError);
    expect(() => loadConfig({ PALMID_MATCH_THRESHOLD: '0.2' })).toThrow(
      /PALMID_MATCH_THRESHOLD: must be at least/,
    );
  });
});

/** PALMID_TARGET_FPIR sets the gallery-wide identification bar (CONTRACT §10). */
describe('PALMID_TARGET_FPIR', () => {
  it('defaults to DEFAULT_TARGET_FPIR, accepts 1e-9 … 1e-2 (also as exponent text), refuses the rest naming the key', () => {
    expect(loadConfig({}).PALMID_TARGET_FPIR).toBe(DEFAULT_TARGET_FPIR);
    expect(loadConfig({ PALMID_TARGET_FPIR: '1e-6' }).PALMID_TARGET_FPIR).toBe(1e-6);
    expect(loadConfig({ PALMID_TARGET_FPIR: '0.01' }).PALMID_TARGET_FPIR).toBe(0.01);
    expect(loadConfig({ PALMID_TARGET_FPIR: '1e-9' }).PALMID_TARGET_FPIR).toBe(1e-9);
    for (const bad of ['0', '0.05', '1e-10', '-1e-4', 'strict'])
      expect(() => loadConfig({ PALMID_TARGET_FPIR: bad })).toThrow(/PALMID_TARGET_FPIR/);
  });

  it("reaches the server's gallery: a stricter target raises the bar it decides with", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palmid-fpir-'));
    try {
      const bars: number[] = [];
      for (const target of ['1e-2', '1e-8']) {
        const ctx = await createContext(
          loadConfig({
            DATABASE_URL: `sqlite:${join(dir, `${target}.db`)}`,
            PALMID_KEY_FILE: join(dir, 'master.key'),
            PALMID_TARGET_FPIR: target,
          }),
        );
        try {
          expect(ctx.gallery.rule.policy.targetFpir).toBe(Number(target));
          bars.push(decisionBar(1000, ctx.gallery.rule.policy.targetFpir));
        } finally {
          await closeContext(ctx);
        }
      }
      expect(bars[1]! - bars[0]!).toBeCloseTo(6, 2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
