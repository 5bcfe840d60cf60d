import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, seedVendor, type TestApp } from '../../../dev/testing.ts';
import { type Call, expectError, userCaller } from '../../../dev/user-api-testkit.ts';
import { openFor } from '../../crypto/keyring.ts';
import { verifyAuditChain } from '../audit/service.ts';
import { appendTransaction } from '../ledger/service.ts';
import { addPalm, dataKeyOf } from '../users/service.ts';

describe('GDPR export and erasure', () => {
  let t: TestApp;
  let call: Call;
  const token = '';

  beforeAll(async () => {
    t = await createTestApp();
    call = userCaller(t, () => token);
  });
  afterAll(() => t.close());

  /** A user with something of everything: attributes, a consent, a palm, a ledger entry, audit records. */
  async function richUser() {
    const u = await seedUser(t.ctx);
    const db = t.ctx.database.db;
    const vendor = await seedVendor(t.ctx, `Shop ${u.userId.slice(0, 8)}`);
    const as = { token: u.token };
    await call({ method: 'PUT', url: '/v1/attributes/email', payload: { value: 'gdpr@example.org' }, ...as });
    await call({
      method: 'PUT',
      url: '/v1/attributes/date_of_birth',
      payload: { value: '1990-01-01' },
      ...as,
    });
    await call({
      method: 'POST',
      url: '/v1/consents',
      payload: {
        vendor_id: vendor.vendor_id,
        attributes: [{ name: 'email', purpose: 'receipts', retention_days: 0 }],
      },
      ...as,
    });
    const key = await dataKeyOf(t.ctx, db, u.userId);
    const template = new Uint8Array(Buffer.from(u.userId, 'utf8')); // unique per user
    const palmId = await addPalm(t.ctx, db, u.userId, key, { hand: 'left', template });
    t.ctx.gallery.add({ palmId, userId: u.userId, hand: 'left', template });
    await appendTransaction(
      db,
      {
        'user-id': u.ledgerId,
        'context-id': crypto.randomUUID(),
        attributes: [
          { type: 'pseudonym', context: null },
          { type: 'payment', context: 450 },
        ],
        vendor: { id: vendor.vendor_id, url: 'https://shop.example' },
        timestamp: Date.now() - 1000,
        result: { code: 'ok' },
      },
      u.ledgerId,
    );
    return { ...u, vendorId: vendor.vendor_id, palmId, template };
  }

  it('export?format=json holds everything about the user, decrypted, and never a template', async () => {
    const u = await richUser();
    const res = await call({ method: 'GET', url: '/v1/gdpr/export?format=json', token: u.token });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-disposition']).toBeUndefined();
    const body = res.json();
    expect(body.success).toBe(true);
    const data = body.data;
    expect(data.user).toMatchObject({
      user_id: u.userId,
      ledger_id: u.ledgerId,
      palm_registered: ['left'],
      palms: [{ palm_id: u.palmId, hand: 'left', registered_at: expect.any(String) }],
      last_auth: null,
    });
    const attrs = Object.fromEntries(
      data.attributes.map((a: { name: string; value: unknown }) => [a.name, a.value] as const),
    );
    expect(attrs).toMatchObject({
      email: 'gdpr@example.org',
      date_of_birth: '1990-01-01',
      user_id: u.userId,
      palm_registered: ['left'],
      is_adult: true,
      is_senior: false,
      loyalty_tier: 'bronze',
    });
    expect(data.consents).toHaveLength(1);
    expect(data.consents[0]).toMatchObject({ vendor_id: u.vendorId, status: 'active' });
    expect(data.ledger.transactions).toEqual([
      expect.objectContaining({
        'user-id': u.ledgerId,
        attributes: [
          { type: 'pseudonym', context: null },
          { type: 'payment', context: 450 },
        ],
        result: { code: 'ok' },
      }),
    ]);
    expect(data.audit.length).toBeGreaterThanOrEqual(2);
    expect(data.audit[0].user_id).toBe(u.userId);
    const text = res.body;
    expect(text).not.toContain('template');
    expect(text).not.toContain(Buffer.from(u.template).toString('base64'));
    // The export itself is audited: one READ per exported attribute.
    const audit = (await call({ method: 'GET', url: '/v1/audit', token: u.token })).json().data.records;
    expect(
      audit.slice(0, data.attributes.length).every((r: { operation: string }) => r.operation === 'READ'),
    ).toBe(true);
  });

  it('an export holds nothing of another user, and includes revoked consents', async () => {
    const a = await richUser();
    const b = await richUser();
    const consents = (await call({ method: 'GET', url: '/v1/consents', token: b.token })).json().data
      .consents;
    await call({ method: 'DELETE', url: `/v1/consents/${consents[0].consent_id}`, token: b.token });
    const res = await call({ method: 'GET', url: '/v1/gdpr/export?format=json', token: b.token });
    const text = res.body;
    expect(text).not.toContain(a.userId);
    expect(text).not.toContain(a.ledgerId);
    expect(text).not.toContain(a.vendorId);
    const data = res.json().data;
    expect(data.user.user_id).toBe(b.userId);
    expect(data.consents).toEqual([
      expect.objectContaining({ status: 'revoked', revoked_at: expect.any(String) }),
    ]);
    expect(data.audit.every((r: { user_id: string }) => r.user_id === b.userId)).toBe(true);
  });

  it('without format the same JSON comes as a download', async () => {
    const u = await seedUser(t.ctx);
    const res = await call({ method: 'GET', url: '/v1/gdpr/export', token: u.token });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-disposition']).toMatch(
      new RegExp(`^attachment; filename="palmid-export-${u.userId}-\\d{4}-\\d{2}-\\d{2}\\.json"$`),
    );
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json().data.user.user_id).toBe(u.userId);
  });

  it('rejects unknown formats and parameters, and needs a token', async () => {
    const u = await seedUser(t.ctx);
    expectError(
      await call({ method: 'GET', url: '/v1/gdpr/export?format=xml', token: u.token }),
      400,
      'INVALID_REQUEST',
      'format',
    );
    expectError(
      await call({ method: 'GET', url: '/v1/gdpr/export?format=json&x=1', token: u.token }),
      400,
      'INVALID_REQUEST',
    );
    expectError(await call({ method: 'GET', url: '/v1/gdpr/export', token: null }), 401, 'UNAUTHORIZED');
    expectError(
      await call({ method: 'DELETE', url: '/v1/gdpr/delete-me', token: null }),
      401,
      'UNAUTHORIZED',
    );
  });

  it('delete-me erases the user: key shredded, data gone, tokens dead, audit ids kept', async () => {
    const u = await richUser();
    const db = t.ctx.database.db;
    const sealed = await db
      .selectFrom('attributes')
      .select('value_enc')
      .where('user_id', '=', u.userId)
      .where('name', '=', 'email')
      .executeTakeFirstOrThrow();
    const keyBefore = await dataKeyOf(t.ctx, db, u.userId);
    expect(openFor(keyBefore, u.userId, 'attr:email', sealed.value_enc)).toBe('gdpr@example.org');
    const second = await t.app.inject({ method: 'GET', url: '/health' }); // unrelated traffic in between
    expect(second.statusCode).toBe(200);

    const res = await call({ method: 'DELETE', url: '/v1/gdpr/delete-me', token: u.token });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({ deleted: true, deleted_at: expect.any(String) });

    // Tokens stop working.
    expectError(await call({ method: 'GET', url: '/v1/attributes', token: u.token }), 401, 'UNAUTHORIZED');
    expectError(
      await call({ method: 'DELETE', url: '/v1/gdpr/delete-me', token: u.token }),
      401,
      'UNAUTHORIZED',
    );
    // Crypto-shredding: the wrapped key is gone, so an old ciphertext can no longer be opened.
    const userRow = await db
      .selectFrom('users')
      .selectAll()
      .where('id', '=', u.userId)
      .executeTakeFirstOrThrow();
    expect(userRow.wrapped_key).toBeNull();
    expect(userRow.erased_at).not.toBeNull();
    await expect(dataKeyOf(t.ctx, db, u.userId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    for (const table of ['attributes', 'consents', 'palms', 'user_tokens'] as const) {
      const rows = await db.selectFrom(table).select('user_id').where('user_id', '=', u.userId).execute();
      expect(rows, table).toHaveLength(0);
    }
    const ledger = await db
      .selectFrom('ledger')
      .select('id')
      .where('ledger_user_id', '=', u.ledgerId)
      .execute();
    expect(ledger).toHaveLength(0);
    // The gallery no longer matches the palm.
    expect(t.ctx.gallery.identify(u.template)).toBeNull();
    // Audit rows stay in the chain, never with values; none still names the user (their personal fields
    // were sealed under the shredded key); the erasure itself is recorded, naming no one.
    const named = await db.selectFrom('audit').select('seq').where('user_id', '=', u.userId).execute();
    expect(named).toHaveLength(0);
    const audit = await db.selectFrom('audit').selectAll().orderBy('seq', 'desc').execute();
    expect(audit[0]).toMatchObject({
      operation: 'DELETE',
      attribute_name: '*',
      result: 'SUCCESS',
      user_id: 'erased',
      vendor_id: null,
      ip_address: '',
      user_agent: '',
    });
    expect(JSON.stringify(audit)).not.toContain('gdpr@example.org');
    expect(JSON.stringify(audit)).not.toContain(u.userId);
    expect((await verifyAuditChain(db, t.ctx.keyring)).ok).toBe(true);
  });
});
