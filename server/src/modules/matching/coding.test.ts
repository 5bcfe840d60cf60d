import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IMPOSTOR_MODELS } from '@palmid/palm/decision';
import { MATCH_THRESHOLDS } from '@palmid/palm/threshold';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { randomTemplate } from '../../../../test/support/templates.ts';
import { attestPalms, seedVendor, vendorDevice } from '../../../dev/testing.ts';
import { buildApp } from '../../app.ts';
import { closeContext, createContext } from '../../bootstrap.ts';
import { loadConfig } from '../../config.ts';

/** PALMID_TEMPLATE_CODING: one template coding per network (README, configuration; docs/deployment.md). */
describe('template coding of the network', () => {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-coding-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const env = (coding?: string) => ({
    DATABASE_URL: `sqlite:${join(dir, 'palmid.db')}`,
    PALMID_KEY_FILE: join(dir, 'master.key'),
    PALMID_ENV: 'development',
    ...(coding ? { PALMID_TEMPLATE_CODING: coding } : {}),
  });

  it('is `wide` by default and only `wide` or `fine`', () => {
    expect(loadConfig(env()).PALMID_TEMPLATE_CODING).toBe('wide');
    expect(loadConfig(env('fine')).PALMID_TEMPLATE_CODING).toBe('fine');
    expect(() => loadConfig(env('coarse'))).toThrow(/PALMID_TEMPLATE_CODING/);
  });

  it('takes the per-comparison threshold of its coding as default and floor', () => {
    expect(loadConfig(env()).PALMID_MATCH_THRESHOLD).toBe(MATCH_THRESHOLDS.wide);
    expect(loadConfig(env('fine')).PALMID_MATCH_THRESHOLD).toBe(MATCH_THRESHOLDS.fine);
    expect(MATCH_THRESHOLDS.fine).toBeLessThan(MATCH_THRESHOLDS.wide);
    // a value between the two floors is a raise under `fine`, a lowering under `wide`
    const between = (MATCH_THRESHOLDS.fine + MATCH_THRESHOLDS.wide) / 2;
    expect(
      loadConfig({ ...env('fine'), PALMID_MATCH_THRESHOLD: String(between) }).PALMID_MATCH_THRESHOLD,
    ).toBe(between);
    expect(() => loadConfig({ ...env(), PALMID_MATCH_THRESHOLD: String(between) })).toThrow(
      /PALMID_MATCH_THRESHOLD: must be at least the calibrated default 0.325 of the wide template coding/,
    );
  });

  it('decides with its coding’s model, refuses the other coding over the vendor API, and leaves stored palms of the other coding out', async () => {
    // a `wide` network enrols one user
    const wide = await createContext(loadConfig(env()));
    const app = await buildApp(wide);
    const vendor = await seedVendor(wide, 'Coding Vendor');
    const device = await vendorDevice(wide, vendor.vendor_id);
    const headers = { 'x-api-key': vendor.api_key };
    const enrol = (a: typeof app, template: string) =>
      a.inject({
        method: 'POST',
        url: '/api/v1/mpc/users/create',
        headers,
        payload: { palms: attestPalms(device, [{ hand: 'right' as const, template }]) },
      });
    expect((await enrol(app, randomTemplate('wide'))).statusCode).toBe(201);
    expect(wide.gallery.size).toBe(1);
    await app.close();
    await closeContext(wide);

    // the same store under `fine`: the wide palm is not searched, one warning says so
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const fine = await createContext(loadConfig(env('fine')));
    try {
      expect(warn.mock.calls.map((c) => String(c[0]))).toContainEqual(
        expect.stringMatching(/1 enrolled palm\(s\) are coded otherwise than PALMID_TEMPLATE_CODING=fine/),
      );
      warn.mockRestore();
      expect(fine.gallery.size).toBe(0);
      expect(fine.gallery.rule.policy.model).toEqual(IMPOSTOR_MODELS.fine);
      expect(fine.gallery.rule.maxDistance).toBeCloseTo((1 - MATCH_THRESHOLDS.fine) / 2, 9);
      const app2 = await buildApp(fine);
      const refused = await enrol(app2, randomTemplate('wide'));
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error).toMatchObject({
        code: 'INVALID_REQUEST',
        details: { reason: 'wrong_coding' },
      });
      expect(refused.json().error.message).toMatch(/coded "wide"; this network compares "fine" templates/);
      expect((await enrol(app2, randomTemplate('fine'))).statusCode).toBe(201);
      expect(fine.gallery.size).toBe(1);
      await app2.close();
    } finally {
      warn.mockRestore();
      await closeContext(fine);
    }
  });
});
