import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_IMPOSTOR_MODEL } from '@palmid/palm/decision';
import { afterAll, describe, expect, it } from 'vitest';
import { randomTemplate } from '../../../../test/support/templates.ts';
import { closeContext, createContext } from '../../bootstrap.ts';
import { loadConfig } from '../../config.ts';
import { startGalleryCalibration } from './calibration.ts';

/** PALMID_GALLERY_CALIBRATION on the server's own gallery (README, configuration; docs/deployment.md). */
describe('gallery calibration on the server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-calibration-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let runs = 0;

  async function contextWith(users: number, env: Record<string, string> = {}) {
    const config = loadConfig({
      DATABASE_URL: `sqlite:${join(dir, `${++runs}.db`)}`,
      PALMID_KEY_FILE: join(dir, 'master.key'),
      ...env,
    });
    const ctx = await createContext(config);
    for (let i = 0; i < users; i++)
      ctx.gallery.add({
        palmId: `p${i}`,
        userId: `u${i}`,
        hand: 'right',
        template: new Uint8Array(Buffer.from(randomTemplate(), 'base64')),
      });
    return ctx;
  }

  function recorder() {
    const lines: Array<{ level: string; msg: string; obj: object }> = [];
    const at = (level: string) => (obj: object, msg: string) => lines.push({ level, msg, obj });
    return { lines, log: { info: at('info'), warn: at('warn'), error: at('error') } };
  }

  it('says at start-up that a small gallery keeps the shipped model', async () => {
    const ctx = await contextWith(20);
    try {
      const { lines, log } = recorder();
      const c = startGalleryCalibration(ctx, log);
      const result = await c.run();
      await c.stop();
      expect(result).toMatchObject({ users: 20, reason: 'too_few_users', source: 'shipped' });
      expect(lines.at(-1)?.msg).toMatch(
        /20 users, too few to describe strangers; the shipped impostor model/,
      );
      expect(c.last()).toEqual(result);
    } finally {
      await closeContext(ctx);
    }
  });

  it('fits a gallery of 220 users, keeps the stricter shipped model for easy palms, and adopts a heavier fit', async () => {
    const ctx = await contextWith(220);
    try {
      const { lines, log } = recorder();
      const c = startGalleryCalibration(ctx, log);
      const easy = await c.run();
      expect(easy).toMatchObject({ users: 220, reason: 'fit_lighter', source: 'shipped', pairs: 200_000 });
      expect(lines.at(-1)?.msg).toMatch(/lighter than the shipped model/);
      expect(ctx.gallery.rule.policy.model).toEqual(DEFAULT_IMPOSTOR_MODEL);
      // the same gallery whose strangers resemble each other more (pairs of a wider binomial)
      const g = ctx.gallery as unknown as { impostorDistances: (n: number, r: () => number) => Float64Array };
      g.impostorDistances = (n, r) =>
        Float64Array.from({ length: n }, () => {
          let k = 0;
          for (let j = 0; j < 150; j++) if (r() < 0.45) k++;
          return k / 150;
        });
      const heavy = await c.run();
      await c.stop();
      expect(heavy).toMatchObject({ reason: 'fit_heavier', source: 'gallery' });
      expect(ctx.gallery.rule.policy.model).toEqual(heavy!.fit);
      expect(lines.at(-1)).toMatchObject({ level: 'info' });
      expect(lines.at(-1)!.msg).toMatch(
        /heavier than the shipped model .*: the decision reads evidence with the fit \(the 1e6 bar at distance 0\.\d+ instead of 0\.27\d+\)/,
      );
    } finally {
      await closeContext(ctx);
    }
  });

  it('does nothing with PALMID_GALLERY_CALIBRATION=off', async () => {
    const ctx = await contextWith(220, { PALMID_GALLERY_CALIBRATION: 'off' });
    try {
      const { lines, log } = recorder();
      const c = startGalleryCalibration(ctx, log);
      expect(await c.run()).toBeNull();
      await c.stop();
      expect(lines).toEqual([]);
      expect(ctx.gallery.rule.policy.model).toEqual(DEFAULT_IMPOSTOR_MODEL);
    } finally {
      await closeContext(ctx);
    }
  });
});
