import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, seedVendor, type TestApp } from '../../../dev/testing.ts';
import { activeConsents, grantConsent, revokeConsent } from './service.ts';

const DAY = 86_400_000;

describe('activeConsents', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('maps each consented attribute to its active consent; revoked and expired give nothing', async () => {
    const db = t.ctx.database.db;
    const { userId } = await seedUser(t.ctx);
    const vendor = (await seedVendor(t.ctx, 'Consent Cafe')).vendor_id;
    const other = (await seedVendor(t.ctx, 'Other Shop')).vendor_id;
    const now = Date.now();
    const a = await grantConsent(
      db,
      userId,
      {
        vendor_id: vendor,
        attributes: [
          { name: 'email', purpose: 'receipts', retention_days: 30 },
          { name: 'is_adult', purpose: 'age check', retention_days: 0 },
        ],
      },
      now,
    );
    const b = await grantConsent(
      db,
      userId,
      {
        vendor_id: vendor,
        attributes: [{ name: 'email', purpose: 'newsletter', retention_days: 365 }],
        expires_at: new Date(now + 2 * DAY).toISOString(),
      },
      now + 1,
    );
    await grantConsent(
      db,
      userId,
      { vendor_id: vendor, attributes: [{ name: 'phone', purpose: 'sms', retention_days: 1 }] },
      now + 2,
    ).then((c) => revokeConsent(db, userId, c.consent_id, now + 3));
    await grantConsent(
      db,
      userId,
      { vendor_id: other, attributes: [{ name: 'name', purpose: 'x', retention_days: 1 }] },
      now,
    );

    const map = await activeConsents(db, userId, vendor, now + 10);
    expect(Object.fromEntries(map)).toEqual({
      email: { consent_id: b.consent_id, purpose: 'newsletter', retention_days: 365, audit_log: true },
      is_adult: { consent_id: a.consent_id, purpose: 'age check', retention_days: 0, audit_log: true },
    });
    // After b expires, a covers email again.
    const later = await activeConsents(db, userId, vendor, now + 3 * DAY);
    expect(later.get('email')?.consent_id).toBe(a.consent_id);
    // After a's default 365 days nothing is left.
    expect((await activeConsents(db, userId, vendor, now + 366 * DAY)).size).toBe(0);
    expect((await activeConsents(db, crypto.randomUUID(), vendor, now)).size).toBe(0);
  });
});
