import { pseudonym } from '@palmid/contracts/crypto/ids';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attestBody,
  attestPalms,
  createTestApp,
  seedVendor,
  type TestApp,
  type TestDevice,
  vendorDevice,
} from '../../../dev/testing.ts';
import { grantConsent } from '../consents/service.ts';

const tpl = (s: string) => Buffer.from(s.padEnd(24, '.')).toString('base64');

describe('/api/v1/mpc/users', () => {
  let t: TestApp;
  let a: { vendor_id: string; api_key: string };
  let b: { vendor_id: string; api_key: string };
  const call = (op: string, body: unknown, key = a.api_key) =>
    t.app.inject({
      method: 'POST',
      url: `/api/v1/mpc/users/${op}`,
      headers: { 'x-api-key': key },
      payload: body as object,
    });

  let devA: TestDevice;
  /** The internal id, as the user sees it (user API); vendors only ever see their own id for the user. */
  const internalId = async (token: string): Promise<string> =>
    (
      await t.app.inject({
        method: 'GET',
        url: '/v1/attributes/user_id',
        headers: { authorization: `Bearer ${token}` },
      })
    ).json().data.value;

  beforeAll(async () => {
    t = await createTestApp();
    a = await seedVendor(t.ctx, 'Vendor A');
    b = await seedVendor(t.ctx, 'Vendor B');
    devA = await vendorDevice(t.ctx, a.vendor_id);
  });
  afterAll(() => t.close());

  it('creates a user with attributes and palms; a test key also gets a user token', async () => {
    const res = await call('create', {
      attributes: { email: 'bob@example.com' },
      palms: attestPalms(devA, [{ hand: 'left' as const, template: tpl('bob-left') }]),
    });
    expect(res.statusCode).toBe(201);
    const d = res.json().data;
    // the vendor-scoped id is not the internal id; the pseudonym is keyed by the internal one
    const internal = await internalId(d.user_token);
    expect(d.user_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(d.user_id).not.toBe(internal);
    expect(d.pseudonym).toBe(pseudonym(internal, a.vendor_id));
    expect(d.pseudonym).not.toBe(pseudonym(d.user_id, a.vendor_id));
    expect(d.ledger_id).toMatch(/^[0-9a-f]{64}$/);
    expect(d.user_token).toMatch(/^ut_/);
    // the palm is identifiable at once
    const auth = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth',
      headers: { 'x-api-key': a.api_key },
      payload: attestBody(devA, { auth_context: { type: 'login' }, palm: { template: tpl('bob-left') } }),
    });
    expect(auth.json().data.auth_result.user_id).toBe(d.pseudonym);
    // the user token works on the user API
    const me = await t.app.inject({
      method: 'GET',
      url: '/v1/consents',
      headers: { authorization: `Bearer ${d.user_token}` },
    });
    expect(me.statusCode).toBe(200);
  });

  it('read returns only consented attributes; update and delete are owner-only', async () => {
    const { user_id, user_token } = (
      await call('create', { attributes: { email: 'carol@example.com', phone: '+33612345678' } })
    ).json().data;
    let read = (await call('read', { user_id })).json().data;
    expect(read).toMatchObject({ user_id, palm_registered: [], attributes: {} });
    const internal = await internalId(user_token);
    await grantConsent(
      t.ctx.database.db,
      internal,
      {
        vendor_id: a.vendor_id,
        attributes: [
          { name: 'email', purpose: 'receipts', retention_days: 0 },
          { name: 'user_id', purpose: 'support', retention_days: 0 },
        ],
      },
      Date.now(),
    );
    read = (await call('read', { user_id })).json().data;
    // the user_id attribute, disclosed to the vendor, is the vendor's own id for the user
    expect(read.attributes).toEqual({ email: 'carol@example.com', user_id });

    // another vendor, with this vendor's id or the internal one: the same 404 as an unknown id
    for (const id of [user_id, internal]) {
      expect((await call('read', { user_id: id }, b.api_key)).statusCode).toBe(404);
      expect(
        (await call('update', { user_id: id, attributes: { email: 'x@example.com' } }, b.api_key)).statusCode,
      ).toBe(404);
      expect((await call('delete', { user_id: id }, b.api_key)).statusCode).toBe(404);
    }
    // nor does the internal id work for the vendor that created the user
    expect((await call('read', { user_id: internal })).statusCode).toBe(404);

    const change = {
      user_id,
      attributes: { email: 'carol@new.example' },
      palms: attestPalms(devA, [{ hand: 'right' as const, template: tpl('carol-right') }]),
    };
    // palms need the user's one-time code (docs/security.md)
    const unconfirmed = await call('update', change);
    expect(unconfirmed.statusCode).toBe(400);
    expect(unconfirmed.json().error.details).toMatchObject({ reason: 'palm_confirmation_required' });
    const confirm = await t.app.inject({
      method: 'POST',
      url: '/v1/palms/confirm',
      headers: { authorization: `Bearer ${user_token}` },
    });
    expect(confirm.statusCode).toBe(201);
    const upd = await call('update', { ...change, confirmation_code: confirm.json().data.confirmation_code });
    expect(upd.json().data).toEqual({ user_id, updated: ['email'] });
    read = (await call('read', { user_id })).json().data;
    expect(read.attributes.email).toBe('carol@new.example');
    expect(read.palm_registered).toEqual(['right']);

    const del = await call('delete', { user_id });
    expect(del.json().data).toEqual({ user_id, deleted: true });
    expect((await call('read', { user_id })).statusCode).toBe(404);
    const auth = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth',
      headers: { 'x-api-key': a.api_key },
      payload: attestBody(devA, { auth_context: { type: 'login' }, palm: { template: tpl('carol-right') } }),
    });
    expect(auth.json().data.auth_result.reason).toBe('no_match');
  });

  it('palms are believed only when a capture device of the calling vendor attested them (docs/vendor-api.md)', async () => {
    const users = async () =>
      Number(
        (
          await t.ctx.database.db
            .selectFrom('users')
            .select(t.ctx.database.db.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await users();
    const palm = { hand: 'right' as const, template: tpl('dora-right'), liveness: 0.9 };
    const refused = async (palms: unknown[], key = a.api_key) => {
      const res = await call('create', { palms }, key);
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json().error.details).toMatchObject({ field: 'palms', reason: 'attestation_failed' });
    };
    // a bare template, as a stolen one would come
    await refused([palm]);
    // attested by vendor B's capture host, sent with vendor A's key
    const devB = await vendorDevice(t.ctx, b.vendor_id, 'B host');
    await refused(attestPalms(devB, [palm]));
    // a genuine attestation for the direct path (another purpose byte) does not register a palm
    await refused([devA.direct(palm)]);
    // the template swapped after signing
    const [signed] = attestPalms(devA, [palm]);
    await refused([{ ...signed!, template: tpl('mallory-right') }]);
    // a capture two minutes old
    await refused(attestPalms(devA, [palm], Date.now() - 120_000));
    expect(await users()).toBe(before);
    // the genuine one registers once; sent again (same counter) it is refused
    const good = attestPalms(devA, [palm]);
    expect((await call('create', { palms: good })).statusCode).toBe(201);
    await refused(good);
    expect(await users()).toBe(before + 1);
  });

  it('validates bodies and attribute values, writing nothing on failure', async () => {
    const before = await t.ctx.database.db
      .selectFrom('users')
      .select(t.ctx.database.db.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const bad = await call('create', { attributes: { email: 'not-an-email' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.details.field).toContain('email');
    const after = await t.ctx.database.db
      .selectFrom('users')
      .select(t.ctx.database.db.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    expect((await call('read', { user_id: 'nope' })).statusCode).toBe(400);
    expect((await call('read', { user_id: '00000000-0000-4000-8000-000000000000' })).statusCode).toBe(404);
    expect((await call('create', { palms: [{ hand: 'middle', template: tpl('x') }] })).statusCode).toBe(400);
    expect((await call('create', { extra: 1 })).json().error.details).toMatchObject({
      field: 'extra',
      reason: 'unknown_field',
    });
  });

  it('a key without the users scope is refused', async () => {
    const authOnly = await seedVendor(t.ctx, 'Auth Only', ['auth']);
    const res = await call('create', {}, authOnly.api_key);
    expect(res.statusCode).toBe(403);
  });
});
