import { join } from 'node:path';
import { attestPalms, seedVendor, vendorDevice } from '@palmid/server/dev/testing';
import { createPvs } from '@palmid/server/modules/pvs/service';
import { rotateKey } from '@palmid/server/modules/vendors/service';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeNeeding } from '../support/requirements.ts';
import {
  eventually,
  type Harness,
  NO_CHROMIUM,
  SCREENSHOT_DIR,
  startHarness,
  startKiosk,
} from './harness.ts';

const TEMPLATE = Buffer.from('console-browser-test-palm-0001').toString('base64');

describeNeeding(NO_CHROMIUM)('vendor console in Chromium', () => {
  let hx: Harness;
  let page: Page;
  let shop: { vendor_id: string; api_key: string };
  let kiosk: { close(): void } | undefined;
  let completedId = '';

  beforeAll(async () => {
    hx = await startHarness();
    shop = await seedVendor(hx.t.ctx, 'Demo Shop');
    const created = await hx.t.app.inject({
      method: 'POST',
      url: '/api/v1/mpc/users/create',
      headers: { 'x-api-key': shop.api_key },
      payload: {
        attributes: { email: 'grace@example.org' },
        palms: attestPalms(await vendorDevice(hx.t.ctx, shop.vendor_id), [
          { hand: 'right' as const, template: TEMPLATE },
        ]),
      },
    });
    const user = created.json().data as { user_token: string };
    const consent = await hx.t.app.inject({
      method: 'POST',
      url: '/v1/consents',
      headers: { authorization: `Bearer ${user.user_token}` },
      payload: {
        vendor_id: shop.vendor_id,
        attributes: [{ name: 'email', purpose: 'receipt', retention_days: 0 }],
      },
    });
    expect(consent.statusCode).toBe(201);
    page = await hx.newPage();
    await page.goto(`${hx.base}/console`);
    await page.waitForSelector('html[data-ready="console"]');
  });
  afterAll(async () => {
    kiosk?.close();
    await hx?.close();
  });

  it('refuses a wrong key inline and keeps no key anywhere but memory', async () => {
    await page.getByLabel('API key').fill('sk_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await eventually(() => page.locator('#api-key-error').textContent()).toContain('not accepted');

    await page.getByLabel('API key').fill(shop.api_key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Vendor console', level: 1 }).waitFor();
    await eventually(() => page.locator('#vendor-name').textContent()).toBe('Demo Shop');
    await eventually(() => page.locator('#live-state').getAttribute('data-state')).toBe('live');
    expect(await page.locator('#kiosks').textContent()).toBe('0');
    expect(await page.getByLabel('API key').inputValue()).toBe('');
    const stored = await page.evaluate(
      'JSON.stringify([localStorage.length, sessionStorage.length, document.cookie, location.href])',
    );
    expect(stored).toBe(JSON.stringify([0, 0, '', `${hx.base}/console`]));
    // the rate-limit budget comes from the status call's headers
    await eventually(() => page.locator('#budget tr[data-bucket="Status"]').textContent()).toMatch(
      /Status\d+100/,
    );
  });

  it('shows a created payment context go from pending to completed, live, and its ledger decoded', async () => {
    await page.getByLabel('Amount (smallest unit)').fill('0');
    await page.getByRole('button', { name: 'Create payment context' }).click();
    await eventually(() => page.locator('#amount-error').textContent()).toContain('at least 1');

    await page.getByLabel('Amount (smallest unit)').fill('450');
    await page.getByLabel('Attributes you would like (optional)').fill('email');
    await page.getByRole('button', { name: 'Create payment context' }).click();
    const row = page.locator('#contexts tr[data-auth-id]');
    await row.waitFor();
    const authId = (await row.getAttribute('data-auth-id'))!;
    completedId = authId;
    const status = page.locator(`#contexts tr[data-auth-id="${authId}"] .badge`);
    await eventually(() => status.textContent()).toBe('pending');
    expect(await row.textContent()).toContain('€4.50');

    // a kiosk of this vendor comes online: the pending context is delivered to it and scanned
    const pvs = await createPvs(hx.t.ctx.database.db, { name: 'till 1', vendorId: shop.vendor_id });
    kiosk = await startKiosk(hx.base, pvs, TEMPLATE);
    await eventually(() => status.textContent()).toBe('scanning');
    await eventually(() => status.textContent()).toBe('completed');
    const text = (await row.textContent()) ?? '';
    expect(text).toContain('Paid by');
    expect(text).toContain('email: grace@example.org');
    const log = (await page.locator('#context-log').textContent()) ?? '';
    expect(log.indexOf('scanning')).toBeLessThan(log.indexOf('completed'));

    await page.getByRole('button', { name: 'Refresh' }).click();
    await eventually(() => page.locator('#kiosks').textContent()).toBe('1');

    await row.getByRole('button', { name: /Show ledger/ }).click();
    const tx = page.locator(`#ledger-table tr[data-context-id="${authId}"]`);
    await tx.waitFor();
    const txText = (await tx.textContent()) ?? '';
    expect(txText).toContain('payment of €4.50');
    expect(txText).toContain('pseudonym');
    expect(txText).toContain('ok');
    await eventually(() => page.locator('#budget tr[data-bucket="Ledger"]').textContent()).toMatch(
      /Ledger\d+50/,
    );
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'console.png'), fullPage: true });
  });

  it('the amount hint follows the amount and the currency; an error moves nothing; the created note goes', async () => {
    kiosk?.close(); // no kiosk: the contexts made here stay pending
    kiosk = undefined;
    const hint = page.locator('#amount-hint');
    await page.getByLabel('Amount (smallest unit)').fill('1250');
    await page.getByLabel('Currency').fill('EUR');
    await eventually(() => hint.textContent()).toBe(
      '1250 is €12.50 (amounts are in the smallest unit of EUR, 1/100).',
    );
    await page.getByLabel('Currency').fill('JPY');
    await eventually(() => hint.textContent()).toBe('1250 is JP¥1,250 (JPY has no minor unit).');
    await page.getByLabel('Currency').fill('XX');
    await eventually(() => hint.textContent()).toContain('Enter a three-letter currency code');
    await page.getByLabel('Currency').fill('XYZ');
    await eventually(() => hint.textContent()).toContain('XYZ is not an ISO 4217 currency code');
    await page.getByLabel('Currency').fill('KWD');
    await eventually(() => hint.textContent()).toMatch(
      /^1250 is KWD\s1\.250 \(amounts are in the smallest unit of KWD, 1\/1000\)\.$/,
    );
    await page.getByLabel('Amount (smallest unit)').fill('100000000000');
    await page.getByLabel('Currency').fill('EUR');
    await eventually(() => hint.textContent()).toBe('At most €999,999,999.99 (99999999999) in EUR.');
    await page.getByLabel('Amount (smallest unit)').fill('1250');

    await page.getByLabel('Currency').fill('EUR');
    const before = await page.getByLabel('Currency').boundingBox();
    await page.getByLabel('Amount (smallest unit)').fill('0');
    await page.getByRole('button', { name: 'Create payment context' }).click();
    await eventually(() => page.locator('#amount-error').textContent()).toContain("currency's smallest unit");
    const after = await page.getByLabel('Currency').boundingBox();
    expect(after).toEqual(before);

    // a created context is reported once; the line goes when the context moves on or the form is edited
    await page.getByLabel('Amount (smallest unit)').fill('700');
    await page.getByRole('button', { name: 'Create payment context' }).click();
    const note = page.locator('#create-form .form-status');
    await eventually(() => note.textContent()).toMatch(
      /^Created context [0-9a-f]{8}…; its status is in the table\.$/,
    );
    await page.getByLabel('Amount (smallest unit)').fill('701');
    await eventually(() => note.count()).toBe(0);
    const row = page.locator('#contexts tr[data-auth-id]', { hasText: '€7.00' });
    await row.getByRole('button', { name: /Cancel context/ }).click();
    await eventually(() => row.locator('.badge').textContent()).toBe('cancelled');
  });

  it('the ledger table keeps dates on one line and words an entrance without "not set"', async () => {
    const entrance = await hx.t.app.inject({
      method: 'POST',
      url: '/api/v1/auth',
      headers: { 'x-api-key': shop.api_key },
      payload: {
        auth_context: { type: 'entrance' },
        // the shop's own capture host attests the palm (docs/vendor-api.md "Attested palms")
        palm: (await vendorDevice(hx.t.ctx, shop.vendor_id)).direct({
          template: TEMPLATE,
          hand: 'right',
          liveness: 0.95,
        }),
      },
    });
    expect(entrance.statusCode).toBe(200);
    const ledgerId = entrance.json().data.auth_result.ledger_id as string;
    const entranceId = entrance.json().data.auth_id as string;
    await page.getByLabel('Ledger id').fill(ledgerId);
    await page.getByRole('button', { name: 'Look up' }).click();
    const tx = page.locator(`#ledger-table tr[data-context-id="${entranceId}"]`);
    await tx.waitFor();
    const cells = tx.locator('td');
    expect(await cells.nth(2).textContent()).toMatch(/^pseudonym [0-9a-f]{8}… · entrance$/);
    expect(await tx.textContent()).not.toContain('not set');
    // one line: the time cell is no taller than the single-line context cell beside it
    const time = await page.evaluate(
      `(() => { const el = document.querySelector('#ledger-table tr[data-context-id="${entranceId}"] td'); const r = document.createRange(); r.selectNodeContents(el); return { lines: r.getClientRects().length, whiteSpace: getComputedStyle(el).whiteSpace }; })()`,
    );
    expect(time).toEqual({ lines: 1, whiteSpace: 'nowrap' });
  });

  it('the ledger table fits its card: no sideways scrolling on a laptop screen', async () => {
    // a refused payment (no consent for the phone number) adds a long result code to the ledger
    const refused = await hx.t.app.inject({
      method: 'POST',
      url: '/api/v1/auth',
      headers: { 'x-api-key': shop.api_key },
      payload: {
        auth_context: { type: 'payment', amount: 125_000, currency: 'EUR', attributes_required: ['phone'] },
        palm: (await vendorDevice(hx.t.ctx, shop.vendor_id)).direct({
          template: TEMPLATE,
          hand: 'right',
          liveness: 0.95,
        }),
      },
    });
    expect(refused.json().data.auth_result.reason).toBe('consent_missing');
    // a small laptop screen
    await page.setViewportSize({ width: 1024, height: 768 });
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.locator(`#ledger-table tr[data-context-id="${refused.json().data.auth_id}"]`).waitFor();
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'console-ledger-1024.png'), fullPage: true });
    const fit = (await page.evaluate(`(() => {
      const table = document.querySelector('#ledger-table');
      const wrap = table.closest('.table-wrap');
      const card = table.closest('.card');
      const t = table.getBoundingClientRect(), c = card.getBoundingClientRect();
      return { overflow: wrap.scrollWidth - wrap.clientWidth, right: Math.round(t.right - c.right) };
    })()`)) as { overflow: number; right: number };
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(fit.overflow).toBeLessThanOrEqual(0);
    expect(fit.right).toBeLessThanOrEqual(0);
  });

  it('a context created elsewhere and followed by id shows its type and amount', async () => {
    const created = await hx.t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': shop.api_key },
      payload: { auth_context: { type: 'payment', amount: 1234, currency: 'EUR' } },
    });
    expect(created.statusCode).toBe(201);
    const id = created.json().data.auth_id as string;
    await page.getByLabel('Context id').fill(id);
    await page.getByRole('button', { name: 'Follow' }).click();
    const row = page.locator(`#contexts tr[data-auth-id="${id}"]`);
    await row.waitFor();
    await eventually(() => row.locator('td').nth(2).textContent()).toBe('payment');
    await eventually(() => row.locator('td').nth(3).textContent()).toBe('€12.34');
    await hx.t.app.inject({
      method: 'POST',
      url: `/api/v1/auth/${id}/cancel`,
      headers: { 'x-api-key': shop.api_key },
    });
  });

  it('cancels a pending context from its row', async () => {
    kiosk?.close();
    kiosk = undefined;
    await page.getByLabel('Amount (smallest unit)').fill('999');
    await page.getByLabel('Attributes you would like (optional)').fill('');
    await page.getByRole('button', { name: 'Create payment context' }).click();
    const row = page.locator('#contexts tr[data-auth-id]', { hasText: '€9.99' });
    await row.waitFor();
    await eventually(() => row.locator('.badge').textContent()).toBe('pending');
    await row.getByRole('button', { name: /Cancel context/ }).click();
    await eventually(() => row.locator('.badge').textContent()).toBe('cancelled');
  });

  it('validates the ledger id before asking the server', async () => {
    await page.getByLabel('Ledger id').fill('not-hex');
    await page.getByRole('button', { name: 'Look up' }).click();
    await eventually(() => page.locator('#ledger-id-error').textContent()).toContain('64 hex');
  });

  it('reconnects after the link drops: auth goes first again and the socket is live again', async () => {
    await eventually(() => page.locator('#live-state').getAttribute('data-state')).toBe('live');
    await page.evaluate(`(() => {
      const el = document.querySelector('#live-state');
      window.__states = [];
      new MutationObserver(() => window.__states.push(el.getAttribute('data-state'))).observe(el, {
        attributes: true,
        attributeFilter: ['data-state'],
      });
    })()`);
    const server = hx.t.app.websocketServer;
    expect(server.clients.size).toBe(1);
    for (const c of server.clients) c.terminate();
    // a first frame other than auth would be closed with 1008 and show `refused`, never `live`
    await eventually(() => page.evaluate('window.__states.join(",")')).toMatch(/reconnecting.*live$/);
    expect(server.clients.size).toBe(1);
  });

  it('signs out and forgets the key: the live socket closes', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await page.locator('#sign-in').isVisible()).toBe(true);
    expect(await page.locator('#contexts tr[data-auth-id]').count()).toBe(0);
  });

  it('ends the session when the key is rotated elsewhere', async () => {
    await page.getByLabel('API key').fill(shop.api_key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await eventually(() => page.locator('#vendor-name').textContent()).toBe('Demo Shop');
    // a context from before (or from the vendor's backend) can be followed by id over the socket
    await eventually(() => page.locator('#live-state').getAttribute('data-state')).toBe('live');
    await page.getByLabel('Context id').fill(completedId);
    await page.getByRole('button', { name: 'Follow' }).click();
    await eventually(() =>
      page.locator(`#contexts tr[data-auth-id="${completedId}"] .badge`).textContent(),
    ).toBe('completed');
    await rotateKey(hx.t.ctx.database.db, shop.vendor_id);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await eventually(() => page.locator('#notice').textContent()).toContain('no longer accepted');
    expect(await page.locator('#sign-in').isVisible()).toBe(true);
  });

  it('produced no console errors and no CSP violations', () => {
    expect(hx.problems.filter((p) => !/status of 40[01]/.test(p))).toEqual([]);
  });
});
