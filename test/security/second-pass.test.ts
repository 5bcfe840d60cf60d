import { createHmac } from 'node:crypto';
import type { TestDevice } from '@palmid/server/dev/testing';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, bindDevice, cli, lastJson, type ServerProc, startServer, tempDir } from '../e2e/harness.ts';
import { createUserWithPalm, userApi } from './users.ts';

/**
 * Trust boundaries, second pass (docs/security.md; issue 26 items 2, 3, 4 and 7), tried against a real
 * server process over HTTP, with the admin CLI as a second process and the SQLite file read directly:
 * vendor-scoped user ids (no vendor can compute another's pseudonym), closed domains for set predicates
 * (no padding), users revoking tokens and removing palms, and an erasure that leaves nothing linkable.
 */
type Failure = { error?: { code?: string; details?: { field?: string; reason?: string } } };
type AuthData = Failure & {
  data: {
    auth_id: string;
    status: string;
    auth_result: {
      success: boolean;
      user_id: string | null;
      reason?: string;
      attributes: Record<string, unknown>;
    };
  };
};
type Created = { user_id: string; pseudonym: string; user_token: string; ledger_id: string };

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const hmac = (key: string, msg: string) => createHmac('sha256', key).update(msg).digest('hex');

describe('second pass: ids, set predicates, credentials, erasure (real server process)', () => {
  const tmp = tempDir('palmid-second-pass-');
  const env = { DATABASE_URL: `sqlite:${tmp.dir}/p.db`, PALMID_KEY_FILE: `${tmp.dir}/k` };
  const admin = (...args: string[]) => cli('server/src/cli/admin.ts', args, env);
  let server: ServerProc;
  type Vendor = { vendor_id: string; api_key: string; host: TestDevice };
  let shopA: Vendor;
  let shopB: Vendor;

  const newVendor = async (name: string): Promise<Vendor> => {
    const v = lastJson<{ vendor_id: string; api_key: string }>(
      (await admin('--json', 'vendor', 'create', '--name', name)).stdout,
    );
    const pvs = lastJson<{ pvs_id: string; device_token: string; provisioning_secret: string }>(
      (await admin('--json', 'pvs', 'create', '--name', `${name} host`, '--vendor', v.vendor_id)).stdout,
    );
    return { ...v, host: await bindDevice(server.base, pvs) };
  };
  const newUser = async (vendor: Vendor, attributes: Record<string, unknown> = {}) => {
    const created = await createUserWithPalm<Created>(server.base, vendor, vendor.host, attributes);
    const internal = await asUser<{ data: { value: string } }>(
      created.user_token,
      'GET',
      '/v1/attributes/user_id',
    );
    expect(internal.status).toBe(200);
    return { ...created, internal: internal.body.data.value };
  };
  const asUser = userApi(() => server.base);
  const consent = (token: string, vendor: Vendor, attributes: unknown[]) =>
    asUser(token, 'POST', '/v1/consents', { vendor_id: vendor.vendor_id, attributes });
  const authenticate = (vendor: Vendor, template: string, context: Record<string, unknown>) =>
    api<AuthData>(server.base, 'POST', '/api/v1/auth', {
      key: vendor.api_key,
      body: {
        auth_context: context,
        palm: vendor.host.direct({ template, hand: 'right', liveness: 0.99 }),
      },
    });
  const mpc = (vendor: Vendor, op: string, body: unknown) =>
    api<Failure & { data: Record<string, unknown> }>(server.base, 'POST', `/api/v1/mpc/users/${op}`, {
      key: vendor.api_key,
      body,
    });

  beforeAll(async () => {
    server = await startServer({ ...env, PORT: '0', PALMID_ENV: 'sandbox' });
    [shopA, shopB] = [await newVendor('Shop A'), await newVendor('Shop B')];
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    tmp.remove();
  });

  it('item 2: every user_id a vendor sees is its own; vendor A cannot compute the pseudonym vendor B sees', async () => {
    const ada = await newUser(shopA);
    // the id vendor A holds is a UUID v4 of its own, not the internal id
    expect(ada.user_id).toMatch(UUID_V4);
    expect(ada.user_id).not.toBe(ada.internal);
    expect(ada.pseudonym).toBe(hmac(ada.internal, shopA.vendor_id));
    for (const v of [shopA, shopB]) {
      const c = await consent(ada.user_token, v, [
        { name: 'user_id', purpose: 'support', retention_days: 0 },
      ]);
      expect(c.status, JSON.stringify(c.body)).toBe(201);
    }
    // A reads its user: the user_id attribute is A's id
    const read = await mpc(shopA, 'read', { user_id: ada.user_id });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(read.body.data).toMatchObject({ user_id: ada.user_id, attributes: { user_id: ada.user_id } });
    // at vendor B: the pseudonym and B's own id, both stable across authentications
    const atB = async () => {
      const r = await authenticate(shopB, ada.template, { type: 'login', attributes_optional: ['user_id'] });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.data.auth_result.success).toBe(true);
      return r.body.data.auth_result;
    };
    const [b1, b2] = [await atB(), await atB()];
    expect(b2).toMatchObject({ user_id: b1.user_id, attributes: { user_id: b1.attributes.user_id } });
    const bId = b1.attributes.user_id as string;
    expect(bId).toMatch(UUID_V4);
    expect(new Set([bId, ada.user_id, ada.internal]).size).toBe(3);
    // SPEC 2.1 rule 5 holds with the internal id as key ...
    expect(b1.user_id).toBe(hmac(ada.internal, shopB.vendor_id));
    // ... and nothing vendor A was ever told computes it
    for (const known of [ada.user_id, ada.pseudonym, ada.ledger_id, read.body.data.attributes]) {
      expect(
        hmac(String(typeof known === 'object' ? JSON.stringify(known) : known), shopB.vendor_id),
      ).not.toBe(b1.user_id);
    }
    expect(JSON.stringify(read.body)).not.toContain(ada.internal);
    // an id issued to another vendor, or the internal id: the same 404 as an id nobody holds
    const unknown = await mpc(shopB, 'read', { user_id: crypto.randomUUID() });
    expect(unknown.status).toBe(404);
    for (const [vendor, id] of [
      [shopB, ada.user_id],
      [shopB, ada.internal],
      [shopA, bId],
      [shopA, ada.internal],
    ] as const) {
      const r = await mpc(vendor, 'read', { user_id: id });
      expect(r.status, id).toBe(404);
      expect(r.body.error).toEqual(unknown.body.error);
    }
    // the user sees the internal id (user API and export)
    const exported = await asUser<{ data: { user: { user_id: string } } }>(
      ada.user_token,
      'GET',
      '/v1/gdpr/export?format=json',
    );
    expect(exported.body.data.user.user_id).toBe(ada.internal);
  }, 60_000);

  it('item 3: set members must be real values; padding does not reach the minimum size; distinct sets are bounded', async () => {
    const erin = await newUser(shopA, { country: 'DE', nickname: 'erin' });
    // a consent naming a padded set is refused, naming the member
    const padded = await consent(erin.user_token, shopA, [
      { name: 'country_in_set', purpose: 'EU', retention_days: 0, values: ['DE', 'zz-1', 'FR'] },
    ]);
    expect(padded.status).toBe(400);
    expect(padded.body.error?.details).toMatchObject({
      field: 'attributes.0.values.1',
      reason: 'not_in_domain',
    });
    const c = await consent(erin.user_token, shopA, [
      { name: 'country_in_set', purpose: 'EU', retention_days: 0 },
      { name: 'nickname_in_set', purpose: 'fun', retention_days: 0 },
    ]);
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    const ask = (attribute: string, values: string[]) =>
      authenticate(shopA, erin.template, {
        type: 'entrance',
        predicates: [{ type: 'in_set', attribute, values, proof: false }],
      });
    // the padding attack of issue 26: junk, lower case and unassigned codes are refused, naming the field
    for (const [values, bad] of [
      [['DE', 'zz-1', 'zz-2'], 1],
      [['de', 'FR', 'IT'], 0],
      [['DE', 'FR', 'XK'], 2],
    ] as const) {
      const r = await ask('country', [...values]);
      expect(r.status, values.join(',')).toBe(400);
      expect(r.body.error?.details).toMatchObject({
        field: `auth_context.predicates.0.values.${bad}`,
        reason: 'not_in_domain',
      });
    }
    // an open-domain attribute cannot be padded either: no member counts, only a named set admits it
    const open = await ask('nickname', ['erin', 'x-1', 'x-2']);
    expect(open.body.data.auth_result).toMatchObject({ success: false, reason: 'consent_missing' });
    expect(open.body.data.auth_result.attributes.nickname_in_set).toBeUndefined();
    // real sets of three: answered; at most two distinct sets per vendor, user and attribute
    const first = await ask('country', ['DE', 'FR', 'IT']);
    expect(first.body.data.auth_result).toMatchObject({
      success: true,
      attributes: { country_in_set: true },
    });
    const second = await ask('country', ['DE', 'AT', 'CH']);
    expect(second.body.data.auth_result).toMatchObject({
      success: true,
      attributes: { country_in_set: true },
    });
    const third = await ask('country', ['DE', 'PL', 'CZ']);
    expect(third.body.data.auth_result).toMatchObject({ success: false, reason: 'consent_missing' });
    expect(third.body.data.auth_result.attributes.country_in_set).toBeUndefined();
    // a set asked before, in any order, is still answered
    const again = await ask('country', ['IT', 'FR', 'DE']);
    expect(again.body.data.auth_result).toMatchObject({
      success: true,
      attributes: { country_in_set: true },
    });
  }, 60_000);

  it('item 4: users list and remove palms, revoke one token or all; the operator revokes all', async () => {
    const fay = await newUser(shopA);
    const dan = await newUser(shopA);
    const list = await asUser<{
      data: { palms: { palm_id: string; hand: string; enrolled_at: string; where: unknown }[] };
    }>(fay.user_token, 'GET', '/v1/palms');
    expect(list.status).toBe(200);
    expect(list.body.data.palms).toHaveLength(1);
    const palm = list.body.data.palms[0]!;
    expect(palm).toMatchObject({
      hand: 'right',
      where: { kind: 'vendor', id: shopA.vendor_id, name: 'Shop A' },
    });
    expect(Date.parse(palm.enrolled_at)).toBeGreaterThan(Date.now() - 120_000);
    expect((await authenticate(shopA, fay.template, { type: 'login' })).body.data.auth_result.success).toBe(
      true,
    );
    // another user's palm is indistinguishable from a missing one
    expect((await asUser(dan.user_token, 'DELETE', `/v1/palms/${palm.palm_id}`)).status).toBe(404);
    const removed = await asUser(fay.user_token, 'DELETE', `/v1/palms/${palm.palm_id}`);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(removed.body.data).toEqual({ palm_id: palm.palm_id, removed: true });
    expect(
      (await asUser<{ data: { palms: unknown[] } }>(fay.user_token, 'GET', '/v1/palms')).body.data.palms,
    ).toEqual([]);
    // the palm no longer identifies anyone, and the removal is in the user's audit trail
    const after = await authenticate(shopA, fay.template, { type: 'login' });
    expect(after.body.data.auth_result).toMatchObject({ success: false, reason: 'no_match' });
    const audit = await asUser<{ data: { records: { attribute_name: string; operation: string }[] } }>(
      fay.user_token,
      'GET',
      '/v1/audit',
    );
    expect(audit.body.data.records[0]).toMatchObject({
      attribute_name: 'palm_registered',
      operation: 'DELETE',
    });

    // tokens: a second one from the operator; revoking the current one leaves the other working
    const issue = async () =>
      lastJson<{ user_token: string }>((await admin('--json', 'user', 'token', fay.internal)).stdout)
        .user_token;
    const second = await issue();
    const me = (token: string) => asUser(token, 'GET', '/v1/consents').then((r) => r.status);
    expect(await me(second)).toBe(200);
    const signOut = await asUser(fay.user_token, 'DELETE', '/v1/tokens/current');
    expect(signOut.status).toBe(200);
    expect(signOut.body.data).toEqual({ revoked: 1 });
    expect(await me(fay.user_token)).toBe(401);
    // a revoked token can no longer mint palm-confirmation codes
    expect((await asUser(fay.user_token, 'POST', '/v1/palms/confirm')).status).toBe(401);
    expect(await me(second)).toBe(200);
    // the operator revokes every token of the user
    const op = await admin('--json', 'user', 'token', 'revoke', fay.internal);
    expect(op.code, op.stderr).toBe(0);
    expect(lastJson(op.stdout)).toEqual({ user_id: fay.internal, revoked: 1 });
    expect(await me(second)).toBe(401);
    // the user signs out everywhere
    const [t1, t2] = [await issue(), await issue()];
    const all = await asUser(t1, 'DELETE', '/v1/tokens');
    expect(all.body.data).toEqual({ revoked: 2 });
    expect([await me(t1), await me(t2)]).toEqual([401, 401]);
    expect(await me(dan.user_token)).toBe(200);
  }, 60_000);

  it('item 7: after delete-me no row links the contexts, ledger entries or audit records to each other or to a vendor', async () => {
    const gus = await newUser(shopA, { email: 'gus@example.com' });
    for (const v of [shopA, shopB]) {
      const c = await consent(gus.user_token, v, [{ name: 'email', purpose: 'receipts', retention_days: 0 }]);
      expect(c.status).toBe(201);
    }
    const ids: string[] = [];
    for (const v of [shopA, shopB]) {
      const r = await authenticate(v, gus.template, {
        type: 'payment',
        amount: 700,
        attributes_optional: ['email'],
      });
      expect(r.body.data.auth_result.success, JSON.stringify(r.body)).toBe(true);
      ids.push(r.body.data.auth_id);
    }
    const erased = await asUser(gus.user_token, 'DELETE', '/v1/gdpr/delete-me');
    expect(erased.status).toBe(200);

    const db = new Database(`${tmp.dir}/p.db`, { readonly: true });
    try {
      const user = db.prepare('select * from users where id = ?').get(gus.internal) as Record<
        string,
        unknown
      >;
      expect(user).toMatchObject({ created_by_vendor: null, registration_date: 0, last_auth: null });
      expect(String(user.ledger_id)).toMatch(/^erased:/);
      const contexts = db
        .prepare(`select user_id from auth_contexts where id in (${ids.map(() => '?').join(',')})`)
        .all(...ids);
      expect(contexts).toEqual([{ user_id: null }, { user_id: null }]);
      // no row anywhere still carries the internal id, but the tombstone itself
      const tables = (
        db
          .prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'")
          .all() as {
          name: string;
        }[]
      ).map((t) => t.name);
      for (const table of tables) {
        const cols = (
          db.prepare(`pragma table_info(${table})`).all() as { name: string; type: string }[]
        ).filter((c) => c.type.toLowerCase() === 'text');
        for (const c of cols) {
          const n = (
            db
              .prepare(`select count(*) as n from ${table} where instr(${c.name}, ?) > 0`)
              .get(gus.internal) as {
              n: number;
            }
          ).n;
          expect(n, `${table}.${c.name}`).toBe(table === 'users' && c.name === 'id' ? 1 : 0);
        }
      }
      // the ledger holds nothing of the user; the vendors' ids for the user are gone
      expect(
        db.prepare('select count(*) as n from vendor_user_ids where user_id = ?').get(gus.internal),
      ).toEqual({
        n: 0,
      });
      // audit rows of erased users keep their place but no person, vendor, IP or User-Agent
      const leftovers = db
        .prepare(
          "select count(*) as n from audit where user_id = 'erased' and (vendor_id is not null or ip_address != '' or user_agent != '' or personal_enc is not null or personal_salt is not null)",
        )
        .get() as { n: number };
      expect(leftovers.n).toBe(0);
      expect(
        (db.prepare("select count(*) as n from audit where user_id = 'erased'").get() as { n: number }).n,
      ).toBeGreaterThan(4);
      // a live user's rows hold IP address and User-Agent only sealed (under that user's key)
      const live = db
        .prepare('select ip_address, user_agent, personal_enc from audit where user_id = ? and hv = 2')
        .all(
          (db.prepare('select id from users where erased_at is null limit 1').get() as { id: string }).id,
        ) as {
        ip_address: string;
        user_agent: string;
        personal_enc: Buffer | null;
      }[];
      expect(live.length).toBeGreaterThan(0);
      for (const r of live)
        expect(r).toMatchObject({ ip_address: '', user_agent: '', personal_enc: expect.any(Buffer) });
    } finally {
      db.close();
    }
    // and the chain still verifies
    const verify = await admin('--json', 'audit', 'verify');
    expect(verify.code, verify.stdout).toBe(0);
  }, 60_000);
});
