import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { attestPalms, seedVendor, vendorDevice } from '@palmid/server/dev/testing';
import { writeAttribute } from '@palmid/server/modules/attributes/service';
import { createClaimCode } from '@palmid/server/modules/users/service';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeNeeding } from '../support/requirements.ts';
import { eventually, type Harness, NO_CHROMIUM, SCREENSHOT_DIR, startHarness } from './harness.ts';

const TEMPLATE = Buffer.from('portal-browser-test-palm-0001').toString('base64');

describeNeeding(NO_CHROMIUM)('user portal in Chromium', () => {
  let hx: Harness;
  let page: Page;
  let cafe: { vendor_id: string; api_key: string };
  let user: { user_id: string; user_token: string };

  const api = (method: string, url: string, headers: Record<string, string>, payload?: unknown) =>
    hx.t.app.inject({
      method: method as 'GET',
      url,
      headers,
      ...(payload ? { payload: payload as object } : {}),
    });

  /** The internal id, as the user sees it; vendors only get their own id for the user. */
  const internalOf = async (token: string): Promise<string> =>
    (await api('GET', '/v1/attributes/user_id', { authorization: `Bearer ${token}` })).json().data.value;

  beforeAll(async () => {
    hx = await startHarness();
    cafe = await seedVendor(hx.t.ctx, 'Cafe X');
    await seedVendor(hx.t.ctx, 'Bakery Y');
    const created = await api(
      'POST',
      '/api/v1/mpc/users/create',
      { 'x-api-key': cafe.api_key },
      {
        attributes: { email: 'ada@example.org', date_of_birth: '1990-04-12' },
        palms: attestPalms(await vendorDevice(hx.t.ctx, cafe.vendor_id), [
          { hand: 'right' as const, template: TEMPLATE },
        ]),
      },
    );
    user = created.json().data;
    user = { ...user, user_id: await internalOf(user.user_token) };
    await writeAttribute(
      hx.t.ctx,
      hx.t.ctx.database.db,
      user.user_id,
      { name: 'identity_verified', value: true, verifiedBy: 'KYC Provider AG' },
      'trusted',
      Date.now(),
    );
    page = await hx.newPage();
    await page.goto(`${hx.base}/portal`);
    await page.waitForSelector('html[data-ready="portal"]');
  });
  afterAll(async () => {
    await hx?.close();
  });

  it('is served with a strict Content-Security-Policy and no third-party origin', async () => {
    const res = await fetch(`${hx.base}/portal`);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    const html = await res.text();
    expect(html).not.toMatch(/<script>|style=|https?:\/\//);
  });

  it('refuses a wrong token inline, then signs in with the right one', async () => {
    await page.getByLabel('User token').fill('ut_wrong');
    await page.getByRole('button', { name: 'Sign in with token' }).click();
    await eventually(() => page.locator('#user-token-error').textContent()).toContain('not valid');
    expect(await page.getByLabel('User token').getAttribute('aria-invalid')).toBe('true');

    await page.getByLabel('User token').fill(user.user_token);
    await page.getByRole('button', { name: 'Sign in with token' }).click();
    await page.getByRole('heading', { name: 'Your palm identity', level: 1 }).waitFor();
    expect(await page.locator('#user-attributes').getByLabel('Email', { exact: true }).inputValue()).toBe(
      'ada@example.org',
    );
    const verified = await page.locator('#verified-attributes').textContent();
    expect(verified).toContain('verified by KYC Provider AG');
    // the token is in memory only
    const stored = await page.evaluate(
      'JSON.stringify([localStorage.length, sessionStorage.length, document.cookie])',
    );
    expect(stored).toBe('[0,0,""]');
  });

  it('corrects an attribute: an invalid value is explained in plain words inline, a valid one is saved (spaces normalised)', async () => {
    const phone = page.locator('#user-attributes').getByLabel('Phone number');
    const form = page.locator('form[data-attribute="phone"]');
    await phone.fill('12345');
    await form.getByRole('button', { name: 'Save' }).click();
    const error = page.locator('#attr-phone-error');
    await error.waitFor();
    const put = await api(
      'PUT',
      '/v1/attributes/phone',
      { authorization: `Bearer ${user.user_token}` },
      {
        value: '12345',
      },
    );
    // plain words chosen by the reason, not the API's developer-facing message
    expect(put.json().error.details.reason).toBe('invalid_phone');
    expect(await error.textContent()).toBe(
      'Enter the number with its country code, for example +49 151 1234 5678.',
    );
    expect(await error.textContent()).not.toContain('E.164');
    expect(await phone.getAttribute('aria-invalid')).toBe('true');

    // written as people write it: spaces and a dash are fine, the server stores E.164
    await page.locator('#user-attributes').getByLabel('Phone number').fill('+49 151 1234-5678');
    await page.locator('form[data-attribute="phone"]').getByRole('button', { name: 'Save' }).click();
    await page.locator('form[data-attribute="phone"] .form-status').waitFor();
    expect(await page.locator('form[data-attribute="phone"] .form-status').textContent()).toBe('Saved.');
    expect(
      await page.locator('#user-attributes').getByLabel('Phone number').getAttribute('aria-invalid'),
    ).toBeNull();
    const stored = await api('GET', '/v1/attributes/phone', { authorization: `Bearer ${user.user_token}` });
    expect(stored.json().data.value).toBe('+4915112345678');

    // clearing a field and saving removes the attribute
    const name = page.locator('#user-attributes').getByLabel('Name', { exact: true });
    await name.fill('Ada');
    await page.locator('form[data-attribute="name"]').getByRole('button', { name: 'Save' }).click();
    await page.locator('form[data-attribute="name"] .form-status').waitFor();
    await page.locator('#user-attributes').getByLabel('Name', { exact: true }).fill('');
    await page.locator('form[data-attribute="name"]').getByRole('button', { name: 'Save' }).click();
    await eventually(
      async () =>
        (await api('GET', '/v1/attributes/name', { authorization: `Bearer ${user.user_token}` })).statusCode,
    ).toBe(404);
  });

  it('grants a consent, shows the vendor reading it in words, then revokes it', async () => {
    // the shared zod schema catches a missing purpose before any request
    await page.getByLabel('Shop', { exact: true }).selectOption({ label: 'Cafe X' });
    await page.locator('#grant-attr-email').check();
    await page.getByRole('button', { name: 'Give access' }).click();
    await eventually(() => page.locator('#grant-purpose-error').textContent()).toContain('Say what');

    await page.getByLabel('Purpose').fill('send the receipt');
    await page.getByLabel('May keep it for (days)').fill('30');
    await page.getByRole('button', { name: 'Give access' }).click();
    const card = page.locator('#consent-list li[data-vendor="Cafe X"]');
    await card.waitFor();
    const text = (await card.textContent()) ?? '';
    expect(text).toContain('your email');
    expect(text).toContain('send the receipt');
    expect(text).toContain('may keep it for 30 days');
    expect(text).toMatch(/ends on \d{1,2} \w+ \d{4}/);

    // Cafe X authenticates the user and receives the email: the audit trail says so in words
    const auth = await api(
      'POST',
      '/api/v1/auth',
      { 'x-api-key': cafe.api_key },
      {
        auth_context: { type: 'payment', amount: 450, attributes_optional: ['email'] },
        palm: (await vendorDevice(hx.t.ctx, cafe.vendor_id)).direct({
          template: TEMPLATE,
          hand: 'right',
          liveness: 0.95,
        }),
      },
    );
    expect(auth.json().data.auth_result.attributes.email).toBe('ada@example.org');
    await page.getByRole('button', { name: 'Refresh activity' }).click();
    await eventually(() => page.locator('#audit').textContent()).toMatch(
      /Cafe X read your email on \d{1,2} \w{3} \d{4}/,
    );
    // the payment is in the user's payment history, in its currency
    const paid = page.locator(`#payments-table tr[data-context-id="${auth.json().data.auth_id}"]`);
    await paid.waitFor();
    expect(await paid.textContent()).toMatch(/Cafe X.*€4\.50.*Paid/);
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'portal.png'), fullPage: true });

    await page.getByRole('button', { name: "Revoke Cafe X's access to email" }).click();
    await eventually(() => page.locator('#consents').textContent()).toContain(
      'No shop may see any of your details.',
    );
    const active = await api('GET', '/v1/consents', { authorization: `Bearer ${user.user_token}` });
    expect(active.json().data.consents).toEqual([]);
    await page.getByLabel('Also show revoked and expired permissions').check();
    await eventually(() => page.locator('#consents').textContent()).toContain('revoked on');
  });

  it('an age check reads as what the shop learned (over 18: yes or no), not the date of birth', async () => {
    const auth = { authorization: `Bearer ${user.user_token}` };
    const consent = await api('POST', '/v1/consents', auth, {
      vendor_id: cafe.vendor_id,
      attributes: [{ name: 'age_over_18', purpose: 'age check at the door', retention_days: 0 }],
    });
    expect(consent.statusCode).toBe(201);
    const entrance = await api(
      'POST',
      '/api/v1/auth',
      { 'x-api-key': cafe.api_key },
      {
        auth_context: { type: 'entrance', minimum_age: 18 },
        palm: (await vendorDevice(hx.t.ctx, cafe.vendor_id)).direct({
          template: TEMPLATE,
          hand: 'right',
          liveness: 0.95,
        }),
      },
    );
    expect(entrance.json().data.auth_result.attributes).toEqual({ age_over_18: true });
    await page.getByRole('button', { name: 'Refresh activity' }).click();
    await eventually(() => page.locator('#audit').textContent()).toContain(
      'Cafe X checked whether you are over 18 (yes or no only; your date of birth was not shared)',
    );
    expect(await page.locator('#audit').textContent()).not.toContain('Cafe X read your date of birth');
    const consentId = consent.json().data.consent_id as string;
    const revoked = await api('DELETE', `/v1/consents/${consentId}`, auth);
    expect(revoked.statusCode).toBe(200);
  });

  it("the user's own page loads are one line, never read as a palm registration", async () => {
    // every page load reads each attribute (palm_registered among them): three loads elsewhere, then this tab
    for (let i = 0; i < 3; i++) {
      expect(
        (await api('GET', '/v1/attributes', { authorization: `Bearer ${user.user_token}` })).statusCode,
      ).toBe(200);
    }
    await page.reload();
    await page.waitForSelector('html[data-ready="portal"]');
    await page.getByLabel('User token').fill(user.user_token);
    await page.getByRole('button', { name: 'Sign in with token' }).click();
    await page.getByRole('heading', { name: 'Your palm identity', level: 1 }).waitFor();
    const own = await api('GET', '/v1/audit', { authorization: `Bearer ${user.user_token}` });
    const ownReads = (
      own.json().data.records as { vendor_id?: string; operation: string; attribute_name: string }[]
    ).filter((r) => !r.vendor_id && r.operation === 'READ');
    expect(ownReads.some((r) => r.attribute_name === 'palm_registered')).toBe(true);
    expect(ownReads.length).toBeGreaterThan(13);
    // the activity list renders after sign-in: wait for its first line (and this visit's reads in it)
    await page.locator('#audit li', { hasText: 'You viewed your details' }).first().waitFor();
    const lines = await page.locator('#audit li').allTextContents();
    // the four loads of this visit are one line, and no two lines in a row are the user's own reads
    expect(lines[0]).toMatch(/^You viewed your details \(\d+ items\) [4-9] times between .+ and .+\.$/);
    const adjacent = lines.filter(
      (l, i) => i > 0 && l.startsWith('You viewed') && lines[i - 1]!.startsWith('You viewed'),
    );
    expect(adjacent).toEqual([]);
    expect(lines.filter((l) => l.startsWith('You viewed')).length).toBeLessThan(
      new Set(ownReads.map((r) => (r as unknown as { timestamp: string }).timestamp)).size,
    );
    expect(lines.join('\n')).not.toContain('A palm was registered to your account at a kiosk');
  });

  it('explains the risk score beside its value', async () => {
    const risk = page.locator('#system-attributes dd[data-attribute="risk_score"]');
    expect(await risk.textContent()).toMatch(
      /^0\.\d+ — from 0 \(low\) to 1 \(high\): the share of your palm checks/,
    );
  });

  it('downloads the GDPR export as a JSON file', async () => {
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download my data' }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^palmid-export-.+\.json$/);
    const body = JSON.parse(readFileSync((await download.path())!, 'utf8'));
    expect(body.data.user.user_id).toBe(user.user_id);
    expect(body.data.attributes.map((a: { name: string }) => a.name)).toContain('phone');
    await eventually(() => page.locator('#data-status').textContent()).toContain('Downloaded');
  });

  it('gives a one-time code to add a palm, and says who registered a palm in the activity', async () => {
    await page.getByRole('button', { name: 'Get a code to add a palm' }).click();
    await eventually(() => page.locator('#palm-status').textContent()).toMatch(
      /Your code: [0-9A-Z]{5}-[0-9A-Z]{5} \(valid until .+, once\)\./,
    );
    await page.getByRole('button', { name: 'Refresh activity' }).click();
    await eventually(() => page.locator('#audit').textContent()).toContain(
      'Cafe X registered a palm to your account',
    );
  });

  it('lists the palm and where it was registered; removing it ends its use and shows in the activity', async () => {
    await eventually(() => page.locator('#palms').textContent()).toMatch(
      /Right palm, registered by Cafe X on/,
    );
    page.once('dialog', (d) => void d.accept());
    await page.locator('#palms').getByRole('button', { name: 'Remove right palm' }).click();
    await eventually(() => page.locator('#palm-status').textContent()).toContain('Right palm removed.');
    await eventually(() => page.locator('#palms').textContent()).toContain('No palm is registered');
    const palms = await api('GET', '/v1/palms', { authorization: `Bearer ${user.user_token}` });
    expect(palms.json().data.palms).toEqual([]);
    await eventually(() => page.locator('#audit').textContent()).toContain(
      'You removed a palm from your account',
    );
  });

  it('looks right on a phone-sized screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.evaluate('window.scrollTo(0, 0)');
    const overflow = await page.evaluate(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    );
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'portal-mobile.png'), fullPage: false });
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('erases the account only after typing ERASE, then the token stops working', async () => {
    await page.getByRole('button', { name: 'Erase my account…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Erase your account?' });
    await dialog.waitFor();
    await dialog.getByLabel('Type ERASE to confirm').fill('erase');
    await dialog.getByRole('button', { name: 'Erase everything' }).click();
    await eventually(() => page.locator('#erase-confirm-error').textContent()).toContain('Type ERASE');
    const still = await api('GET', '/v1/attributes', { authorization: `Bearer ${user.user_token}` });
    expect(still.statusCode).toBe(200);

    await dialog.getByLabel('Type ERASE to confirm').fill('ERASE');
    await dialog.getByRole('button', { name: 'Erase everything' }).click();
    await eventually(() => page.locator('#notice').textContent()).toContain('Your account was erased');
    expect(await page.locator('#sign-in').isVisible()).toBe(true);
    const after = await api('GET', '/v1/attributes', { authorization: `Bearer ${user.user_token}` });
    expect(after.statusCode).toBe(401);
  });

  it('signs in with a kiosk claim code, which then cannot be used again', async () => {
    const created = await api('POST', '/api/v1/mpc/users/create', { 'x-api-key': cafe.api_key }, {});
    const fresh = await createClaimCode(
      hx.t.ctx,
      hx.t.ctx.database.db,
      await internalOf(created.json().data.user_token),
    );
    await page.getByLabel('Kiosk code').fill(fresh.claim_code);
    await page.getByRole('button', { name: 'Sign in with code' }).click();
    await page.getByRole('heading', { name: 'Your palm identity', level: 1 }).waitFor({ state: 'visible' });
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'portal-new-user.png'), fullPage: false });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Kiosk code').fill(fresh.claim_code);
    await page.getByRole('button', { name: 'Sign in with code' }).click();
    await eventually(() => page.locator('#claim-code-error').textContent()).toContain('not valid');
  });

  it('revokes the token of this tab; it stops working at once', async () => {
    const created = await api('POST', '/api/v1/mpc/users/create', { 'x-api-key': cafe.api_key }, {});
    const token = created.json().data.user_token as string;
    await page.getByLabel('User token').fill(token);
    await page.getByRole('button', { name: 'Sign in with token' }).click();
    await page.getByRole('heading', { name: 'Your palm identity', level: 1 }).waitFor({ state: 'visible' });
    await page.getByRole('button', { name: 'Revoke this token' }).click();
    await eventually(() => page.locator('#notice').textContent()).toContain('This token was revoked');
    expect(await page.locator('#sign-in').isVisible()).toBe(true);
    expect((await api('GET', '/v1/attributes', { authorization: `Bearer ${token}` })).statusCode).toBe(401);
  });

  it('works with the keyboard alone, with a visible focus ring', async () => {
    const created = await api('POST', '/api/v1/mpc/users/create', { 'x-api-key': cafe.api_key }, {});
    const code = await createClaimCode(
      hx.t.ctx,
      hx.t.ctx.database.db,
      await internalOf(created.json().data.user_token),
    );
    const kb = await hx.newPage();
    await kb.goto(`${hx.base}/portal`);
    await kb.waitForSelector('html[data-ready="portal"]');
    const focused = async () =>
      (await kb.evaluate(
        '(() => { const e = document.activeElement; const s = getComputedStyle(e); return [e.id || e.className || e.tagName, s.outlineStyle, s.outlineWidth]; })()',
      )) as string[];
    await kb.keyboard.press('Tab');
    expect(await focused()).toEqual(['skip', 'solid', '3px']);
    await kb.keyboard.press('Tab'); // then the first field of the page: the kiosk code
    expect((await focused())[0]).toBe('claim-code');
    await kb.keyboard.type(code.claim_code);
    await kb.keyboard.press('Enter');
    await eventually(async () => (await focused())[0]).toBe('app-title');
    // the erase dialog opens and closes from the keyboard, focus goes into it and back
    await kb.locator('#erase-open').focus();
    await kb.keyboard.press('Enter');
    await eventually(async () => (await focused())[0]).toBe('erase-confirm');
    await kb.keyboard.press('Escape');
    await eventually(() => kb.locator('#erase-dialog').isVisible()).toBe(false);
    // the account is erased elsewhere: the next call ends the session visibly
    const token = created.json().data.user_token as string;
    await api('DELETE', '/v1/gdpr/delete-me', { authorization: `Bearer ${token}` });
    await kb.getByRole('button', { name: 'Refresh activity' }).click();
    await eventually(() => kb.locator('#notice').textContent()).toContain('Your session ended');
    expect(await kb.locator('#sign-in').isVisible()).toBe(true);
    await kb.close();
  });

  it('produced no console errors and no CSP violations', () => {
    expect(hx.problems.filter((p) => !p.includes('401') && !p.includes('400'))).toEqual([]);
  });
});
