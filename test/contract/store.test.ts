import { pseudonym } from '@palmid/contracts/crypto/ids';
import {
  attestBody,
  attestPalms,
  createTestApp,
  type TestApp,
  vendorDevice,
} from '@palmid/server/dev/testing';
import { listAttributes, writeAttribute } from '@palmid/server/modules/attributes/service';
import { appendAudit, verifyAuditChain } from '@palmid/server/modules/audit/service';
import { activeConsents, grantConsent, revokeConsent } from '@palmid/server/modules/consents/service';
import { eraseUser } from '@palmid/server/modules/gdpr/service';
import {
  authenticateUser,
  createClaimCode,
  createUser,
  issueUserToken,
  redeemClaimCode,
} from '@palmid/server/modules/users/service';
import {
  authenticateVendor,
  createVendor,
  revokeKeys,
  rotateKey,
} from '@palmid/server/modules/vendors/service';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../support/postgres.ts';
import { describeNeeding } from '../support/requirements.ts';

/**
 * The store contract: the same domain flows, run against every store the server supports (SQLite and
 * PostgreSQL, selected by DATABASE_URL). A store passes when users cannot tell which one is behind the API.
 */
interface StoreFixture {
  name: 'sqlite' | 'postgres';
  skip: string | null;
  /** DATABASE_URL for a fresh, empty store (undefined: createTestApp's default SQLite file). */
  setup(): Promise<string | undefined>;
  teardown(): Promise<void>;
}

let pg: TestPostgres | undefined;
const stores: StoreFixture[] = [
  { name: 'sqlite', skip: null, setup: async () => undefined, teardown: async () => {} },
  {
    name: 'postgres',
    skip: postgresUnavailable(),
    async setup() {
      pg = await startPostgres();
      return pg.createDatabase();
    },
    async teardown() {
      await pg?.stop();
    },
  },
];

for (const store of stores) {
  describeNeeding(store.skip)(`store contract: ${store.name}`, () => {
    let t: TestApp;
    const tpl = (s: string) => Buffer.from(s.padEnd(24, '.')).toString('base64');

    beforeAll(async () => {
      const url = await store.setup();
      t = await createTestApp(url ? { DATABASE_URL: url } : {});
    }, 60_000);
    afterAll(async () => {
      await t?.close();
      await store.teardown();
    });

    it('reports its kind and a fresh audit chain verifies', async () => {
      expect(t.ctx.database.kind).toBe(store.name);
      const v = await verifyAuditChain(t.ctx.database.db, t.ctx.keyring);
      expect(v).toEqual({ ok: true, rows: 0, problems: [] });
    });

    it('vendors: keys authenticate, rotate and revoke', async () => {
      const db = t.ctx.database.db;
      const v = await createVendor(db, { name: 'Store Cafe', url: 'https://cafe.example', scopes: ['auth'] });
      const p = await authenticateVendor(db, v.api_key, 'development');
      expect(p).toMatchObject({ id: v.vendor_id, name: 'Store Cafe', mode: 'test', scopes: ['auth'] });
      const rotated = await rotateKey(db, v.vendor_id);
      expect(rotated.revoked).toBe(1);
      await expect(authenticateVendor(db, v.api_key, 'development')).rejects.toMatchObject({
        code: 'UNAUTHORIZED',
      });
      expect((await authenticateVendor(db, rotated.api_key, 'development')).id).toBe(v.vendor_id);
      expect((await revokeKeys(db, v.vendor_id)).revoked).toBe(1);
      await expect(authenticateVendor(db, rotated.api_key, 'development')).rejects.toMatchObject({
        code: 'UNAUTHORIZED',
      });
    });

    it('users: tokens and one-time claim codes; timestamps survive as numbers', async () => {
      const db = t.ctx.database.db;
      const u = await createUser(t.ctx, db, null);
      const row = await db.selectFrom('users').selectAll().where('id', '=', u.id).executeTakeFirstOrThrow();
      expect(typeof row.registration_date).toBe('number');
      expect(row.registration_date).toBe(u.registrationDate);
      expect(row.wrapped_key).toBeInstanceOf(Uint8Array);
      const tok = await issueUserToken(t.ctx, db, u.id);
      expect((await authenticateUser(t.ctx, `Bearer ${tok.user_token}`)).id).toBe(u.id);
      const code = await createClaimCode(t.ctx, db, u.id);
      const redeemed = await redeemClaimCode(t.ctx, db, code.claim_code);
      expect(redeemed.user_id).toBe(u.id);
      await expect(redeemClaimCode(t.ctx, db, code.claim_code)).rejects.toMatchObject({
        code: 'UNAUTHORIZED',
      });
    });

    it('attributes are encrypted at rest and decrypt to the written value', async () => {
      const db = t.ctx.database.db;
      const u = await createUser(t.ctx, db, null);
      const now = Date.now();
      await writeAttribute(t.ctx, db, u.id, { name: 'email', value: 'first@example.com' }, 'user', now);
      await writeAttribute(t.ctx, db, u.id, { name: 'email', value: 'second@example.com' }, 'user', now + 1);
      const stored = await db
        .selectFrom('attributes')
        .selectAll()
        .where('user_id', '=', u.id)
        .executeTakeFirstOrThrow();
      expect(Buffer.from(stored.value_enc).toString('utf8')).not.toContain('second@example.com');
      const items = await listAttributes(t.ctx, db, u.id, now + 2);
      expect(items.find((i) => i.name === 'email')).toMatchObject({ value: 'second@example.com' });
    });

    it('consents: grant, active set, revoke', async () => {
      const db = t.ctx.database.db;
      const u = await createUser(t.ctx, db, null);
      const v = await createVendor(db, { name: 'Consent Shop' });
      const now = Date.now();
      const c = await grantConsent(
        db,
        u.id,
        { vendor_id: v.vendor_id, attributes: [{ name: 'email', purpose: 'receipts', retention_days: 30 }] },
        now,
      );
      expect([...(await activeConsents(db, u.id, v.vendor_id, now + 1)).keys()]).toEqual(['email']);
      await revokeConsent(db, u.id, c.consent_id, now + 2);
      expect((await activeConsents(db, u.id, v.vendor_id, now + 3)).size).toBe(0);
    });

    it('auth context: create → resolve → ledger → audit chain verifies; erasure removes everything', async () => {
      const db = t.ctx.database.db;
      const v = await createVendor(db, { name: 'Flow Vendor' });
      const headers = { 'x-api-key': v.api_key };
      // the vendor's capture host (its key, nonces and counter live in this store too)
      const device = await vendorDevice(t.ctx, v.vendor_id);
      const created = await t.app.inject({
        method: 'POST',
        url: '/api/v1/mpc/users/create',
        headers,
        payload: {
          attributes: { email: 'flow@example.com', date_of_birth: '1990-01-01' },
          palms: attestPalms(device, [{ hand: 'right' as const, template: tpl('flow-right') }]),
        },
      });
      expect(created.statusCode).toBe(201);
      const user = created.json().data as { user_id: string; ledger_id: string; user_token: string };
      // the vendor's id for the user is not the internal one (docs/vendor-api.md, "User ids")
      const internal = (
        await t.app.inject({
          method: 'GET',
          url: '/v1/attributes/user_id',
          headers: { authorization: `Bearer ${user.user_token}` },
        })
      ).json().data.value as string;
      expect(internal).not.toBe(user.user_id);
      const consent = await t.app.inject({
        method: 'POST',
        url: '/v1/consents',
        headers: { authorization: `Bearer ${user.user_token}` },
        payload: {
          vendor_id: v.vendor_id,
          attributes: [{ name: 'email', purpose: 'receipts', retention_days: 30 }],
        },
      });
      expect(consent.statusCode).toBe(201);

      const from = Math.floor(Date.now() / 1000) - 5;
      const ctxRes = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/create',
        headers,
        payload: { auth_context: { type: 'payment', amount: 1250, attributes_required: ['email'] } },
      });
      expect(ctxRes.statusCode).toBe(201);
      const authId = ctxRes.json().data.auth_id as string;
      expect(ctxRes.json().data).toMatchObject({ status: 'pending', amount: 1250, currency: 'EUR' });

      const resolved = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth',
        headers,
        payload: attestBody(device, {
          auth_context: { type: 'payment', amount: 990, attributes_required: ['email'] },
          palm: { template: tpl('flow-right'), liveness: 0.99 },
        }),
      });
      expect(resolved.statusCode).toBe(200);
      const result = resolved.json().data.auth_result;
      expect(result).toMatchObject({
        success: true,
        user_id: pseudonym(internal, v.vendor_id),
        attributes: { email: 'flow@example.com' },
      });

      const status = await t.app.inject({ method: 'GET', url: `/api/v1/auth/${authId}/status`, headers });
      expect(status.json().data).toMatchObject({ auth_id: authId, status: 'pending' });

      const ledger = await t.app.inject({
        method: 'GET',
        url: `/api/v1/ledger/transactions/${user.ledger_id}?from=${from}`,
        headers,
      });
      expect(ledger.statusCode).toBe(200);
      expect(ledger.json().transactions).toHaveLength(1);

      const audit = await t.app.inject({
        method: 'GET',
        url: '/v1/audit',
        headers: { authorization: `Bearer ${user.user_token}` },
      });
      expect(audit.json().data.records.map((r: { attribute_name: string }) => r.attribute_name)).toContain(
        'email',
      );
      const chain = await verifyAuditChain(db, t.ctx.keyring);
      expect(chain.ok).toBe(true);
      expect(chain.rows).toBeGreaterThan(0);

      const erased = await t.app.inject({
        method: 'DELETE',
        url: '/v1/gdpr/delete-me',
        headers: { authorization: `Bearer ${user.user_token}` },
      });
      expect(erased.json().data.deleted).toBe(true);
      for (const table of ['palms', 'attributes', 'consents', 'user_tokens'] as const) {
        const n = await db
          .selectFrom(table)
          .select(db.fn.countAll().as('n'))
          .where('user_id', '=', internal)
          .executeTakeFirstOrThrow();
        expect(Number(n.n), table).toBe(0);
      }
      const gone = await t.app.inject({
        method: 'GET',
        url: `/api/v1/ledger/transactions/${user.ledger_id}?from=${from}`,
        headers,
      });
      expect(gone.statusCode).toBe(404);
      const again = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth',
        headers,
        payload: attestBody(device, {
          auth_context: { type: 'login' },
          palm: { template: tpl('flow-right'), liveness: 0.99 },
        }),
      });
      expect(again.json().data.auth_result).toMatchObject({ success: false, reason: 'no_match' });
      expect((await verifyAuditChain(db, t.ctx.keyring)).ok).toBe(true);
      await expect(eraseUser(t.ctx, db, internal)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('concurrent audit writers keep one unbroken chain', async () => {
      const db = t.ctx.database.db;
      const before = (await verifyAuditChain(db, t.ctx.keyring)).rows;
      const caller = { ip: '127.0.0.1', userAgent: 'contract' };
      // Each writer is its own transaction (its own connection on PostgreSQL); they interleave freely.
      await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          db.transaction().execute(async (trx) => {
            await appendAudit(trx, t.ctx.keyring, caller, [
              { userId: `u${i}`, attributeName: 'email', operation: 'READ', result: 'SUCCESS' },
              { userId: `u${i}`, attributeName: 'phone', operation: 'READ', result: 'DENIED' },
            ]);
          }),
        ),
      );
      const after = await verifyAuditChain(db, t.ctx.keyring);
      expect(after.problems).toEqual([]);
      expect(after.rows).toBe(before + 48);
    });

    it("status reads of one turn (one batched query) each get their own context, and only the vendor's", async () => {
      const db = t.ctx.database.db;
      const a = await createVendor(db, { name: 'Batch A' });
      const b = await createVendor(db, { name: 'Batch B' });
      const create = async (key: string, amount: number) => {
        const r = await t.app.inject({
          method: 'POST',
          url: '/api/v1/auth/create',
          headers: { 'x-api-key': key },
          payload: { auth_context: { type: 'payment', amount } },
        });
        expect(r.statusCode).toBe(201);
        return r.json().data.auth_id as string;
      };
      const mine = [await create(a.api_key, 100), await create(a.api_key, 200), await create(a.api_key, 300)];
      const theirs = await create(b.api_key, 400);
      const cancelled = await t.app.inject({
        method: 'POST',
        url: `/api/v1/auth/${mine[1]}/cancel`,
        headers: { 'x-api-key': a.api_key },
      });
      expect(cancelled.statusCode).toBe(200);
      const unknown = '00000000-0000-4000-8000-000000000000';
      const ids = [...mine, theirs, unknown, mine[0]!];
      const answers = await Promise.all(
        ids.map((id) =>
          t.app.inject({
            method: 'GET',
            url: `/api/v1/auth/${id}/status`,
            headers: { 'x-api-key': a.api_key },
          }),
        ),
      );
      expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200, 404, 404, 200]);
      // what each context asked for comes with its status (a client that did not create it can show it)
      const asked = (amount: number) => ({
        type: 'payment',
        amount,
        currency: 'EUR',
        created_at: expect.any(String),
      });
      expect(answers.map((r) => (r.statusCode === 200 ? r.json().data : r.json().error.code))).toEqual([
        { auth_id: mine[0], status: 'pending', ...asked(100) },
        {
          auth_id: mine[1],
          status: 'cancelled',
          auth_result: expect.objectContaining({ success: false }),
          ...asked(200),
        },
        { auth_id: mine[2], status: 'pending', ...asked(300) },
        'NOT_FOUND',
        'NOT_FOUND',
        { auth_id: mine[0], status: 'pending', ...asked(100) },
      ]);
    });
  });
}
