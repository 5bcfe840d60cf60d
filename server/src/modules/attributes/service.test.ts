import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, type TestApp } from '../../../dev/testing.ts';
import { eraseUser } from '../gdpr/service.ts';
import { appendTransaction } from '../ledger/service.ts';
import { attributeKind, readAttributeValues, writeAttribute } from './service.ts';

const DAY = 86_400_000;

describe('readAttributeValues', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('returns current values of every kind and leaves out what has no value', async () => {
    const { userId, ledgerId } = await seedUser(t.ctx);
    const db = t.ctx.database.db;
    const now = Date.now();
    await writeAttribute(t.ctx, db, userId, { name: 'email', value: 'ana@example.org' }, 'user', now);
    await writeAttribute(t.ctx, db, userId, { name: 'date_of_birth', value: '2000-02-29' }, 'user', now);
    await writeAttribute(
      t.ctx,
      db,
      userId,
      { name: 'identity_verified', value: true, verifiedBy: 'kyc' },
      'trusted',
      now,
    );
    await writeAttribute(
      t.ctx,
      db,
      userId,
      { name: 'event_ticket', value: { seat: '12A' }, validUntil: now + 1000, verifiedBy: 'arena' },
      'trusted',
      now,
    );
    await writeAttribute(
      t.ctx,
      db,
      userId,
      { name: 'promo_code', value: 'WELCOME', validFrom: now + DAY },
      'user',
      now,
    );
    await writeAttribute(
      t.ctx,
      db,
      userId,
      { name: 'secret_note', value: 'b64:abcd', clientEncrypted: true },
      'user',
      now,
    );
    await appendTransaction(
      db,
      {
        'user-id': ledgerId,
        'context-id': crypto.randomUUID(),
        attributes: [{ type: 'payment', context: 1250 }],
        vendor: { id: 'v', url: 'https://v.example' },
        timestamp: now - DAY,
        result: { code: 'ok' },
      },
      ledgerId,
    );

    const at = now + 5000; // event_ticket has expired, promo_code is not yet valid
    const values = await readAttributeValues(
      t.ctx,
      db,
      userId,
      [
        'email',
        'date_of_birth',
        'identity_verified',
        'event_ticket',
        'promo_code',
        'secret_note',
        'phone',
        'user_id',
        'palm_registered',
        'registration_date',
        'last_auth',
        'pseudonym',
        'is_adult',
        'is_senior',
        'loyalty_tier',
        'risk_score',
        'Not-A-Name',
      ],
      at,
    );
    expect(Object.fromEntries(values)).toEqual({
      email: 'ana@example.org',
      date_of_birth: '2000-02-29',
      identity_verified: true,
      secret_note: 'b64:abcd',
      user_id: userId,
      palm_registered: [],
      registration_date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      is_adult: true,
      is_senior: false,
      loyalty_tier: 'bronze',
      risk_score: 0.4,
    });
  });

  it('an unknown or erased user yields nothing', async () => {
    const db = t.ctx.database.db;
    expect((await readAttributeValues(t.ctx, db, crypto.randomUUID(), ['email'], Date.now())).size).toBe(0);
    const { userId } = await seedUser(t.ctx);
    await writeAttribute(t.ctx, db, userId, { name: 'email', value: 'b@example.org' }, 'user', Date.now());
    await eraseUser(t.ctx, db, userId);
    expect((await readAttributeValues(t.ctx, db, userId, ['email', 'user_id'], Date.now())).size).toBe(0);
  });

  it('attributeKind follows the catalogue; other names are user attributes', () => {
    expect(attributeKind('user_id')).toBe('system');
    expect(attributeKind('email')).toBe('user');
    expect(attributeKind('age_verified')).toBe('verified');
    expect(attributeKind('risk_score')).toBe('computed');
    expect(attributeKind('favourite_colour')).toBe('user');
  });
});
