import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp, type TestApp, TestDevice } from '@palmid/server/dev/testing';
import type { BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import WebSocket from 'ws';

export const CHROMIUM = '/usr/bin/chromium';
/** Why the browser suites cannot run here, or null (test/support/requirements.ts: a skip, a failure under CI). */
export const NO_CHROMIUM = existsSync(CHROMIUM)
  ? null
  : `${CHROMIUM} not found (apt-get install chromium; .ci/run installs it)`;

/** Screenshots go to docs/img only when asked (UPDATE_SCREENSHOTS=1), so a test run leaves the tree clean. */
export const SCREENSHOT_DIR =
  process.env.UPDATE_SCREENSHOTS === '1'
    ? join(import.meta.dirname, '../../docs/img')
    : join(tmpdir(), 'palmid-screenshots');

/** expect.poll with room for a loaded CI machine (the default gives up after 1 s). */
export const eventually = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 10_000, interval: 50 });

export interface Harness {
  t: TestApp;
  base: string;
  browser: BrowserContext;
  /** Every console error and CSP violation the pages produced. */
  problems: string[];
  newPage(viewport?: { width: number; height: number }): Promise<Page>;
  close(): Promise<void>;
}

/** The real server on a free port, and Debian's Chromium driven by playwright-core with a fresh profile. */
export async function startHarness(): Promise<Harness> {
  const { chromium } = await import('playwright-core');
  const t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
  const profile = mkdtempSync(join(tmpdir(), 'palmid-chromium-'));
  const downloads = mkdtempSync(join(tmpdir(), 'palmid-downloads-'));
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  // the pages are bundled on first request: do that while Chromium starts
  const warm = t.app.inject({ url: '/portal' });
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    acceptDownloads: true,
    downloadsPath: downloads,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  await warm;
  const problems: string[] = [];
  return {
    t,
    base,
    browser,
    problems,
    async newPage(viewport) {
      const page = await browser.newPage();
      if (viewport) await page.setViewportSize(viewport);
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(`console: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      return page;
    },
    async close() {
      await browser.close().catch(() => undefined);
      await t.close();
      rmSync(profile, { recursive: true, force: true });
      rmSync(downloads, { recursive: true, force: true });
    },
  };
}

/** A kiosk on /ws/pvs that answers every scan.request with the given palm template. */
export async function startKiosk(
  base: string,
  pvs: { pvs_id: string; device_token: string; provisioning_secret: string },
  template: string,
) {
  // a device key of its own, bound by the hello below; every identify is attested with it
  const device = new TestDevice(pvs.pvs_id);
  const ws = new WebSocket(`${base.replace('http', 'ws')}/ws/pvs`, {
    headers: { authorization: `Bearer ${pvs.device_token}` },
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let seq = 0;
  ws.on('message', (d) => {
    const f = JSON.parse(d.toString()) as { method?: string; params?: { auth_id?: string; nonce?: string } };
    if (f.method === 'scan.request' && f.params?.auth_id) {
      const { auth_id, nonce } = f.params;
      // a moment "at the scanner", so the console shows the scanning state
      setTimeout(() => {
        const sample = { template, hand: 'right' as const, quality: 0.9, liveness: 0.95 };
        ws.send(
          JSON.stringify({
            id: `identify-${++seq}`,
            method: 'identify',
            params: { auth_id, ...sample, attestation: device.attest('identify', auth_id, nonce, sample) },
          }),
        );
      }, 300);
    }
  });
  ws.send(
    JSON.stringify({
      id: 'hello',
      method: 'hello',
      params: {
        pvs_id: pvs.pvs_id,
        agent_version: 'browser-test',
        firmware: 'sim',
        model: 'sim',
        device_key: { public_key: device.publicKey, provisioning_secret: pvs.provisioning_secret },
      },
    }),
  );
  return { close: () => ws.close() };
}
