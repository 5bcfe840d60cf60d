import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAttestation, generateVerifierKey } from '@palmid/contracts/crypto/attestation';
import {
  deriveServiceKey,
  generateServiceKey,
  type PredicateProof,
  parseServicePublicKey,
  releaseZkResources,
  type ServicePublicKey,
  verifyPredicateProof,
} from '@palmid/zk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attestBody,
  createTestApp,
  seedUser,
  seedVendor,
  type TestApp,
  type TestDevice,
  vendorDevice,
} from '../../../dev/testing.ts';
import { openFor } from '../../crypto/keyring.ts';
import { markAttributeVerified, writeAttribute } from '../attributes/service.ts';
import { identifyPalm, prepareProofs, resolveWithPalm } from '../auth-contexts/resolve.ts';
import { createAuthContext, loadContext } from '../auth-contexts/state.ts';
import { grantConsent, listConsents, revokeConsent } from '../consents/service.ts';
import { addPalm, dataKeyOf } from '../users/service.ts';
import { createVerifier, readOpenings, revokeVerifier } from './service.ts';
import { proofTimings } from './zk.ts';

/**
 * Issue 6 end to end through the server's interfaces: entrance contexts with `age_proof` and `in_set`
 * predicates, the published key, verified attributes from attestations (docs/zk-proofs.md).
 */
const DAY = 86_400_000;
const CALLER = { ip: '127.0.0.1', userAgent: 'zk-flow-test' };
const tpl = (s: string) => Buffer.from(`palm-template-${s}`.padEnd(24, '0')).toString('base64');

describe('zero-knowledge proofs in the server flow', () => {
  let t: TestApp;
  const clock = Date.parse('2026-06-01T12:00:00Z');
  let key: string;
  let vendorId: string;
  let device: TestDevice;
  let serviceKey: ServicePublicKey;
  const users: Record<string, { userId: string; token: string }> = {};

  const api = (method: 'GET' | 'POST', url: string, body?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: { 'x-api-key': key },
      ...(body === undefined ? {} : { payload: attestBody(device, body, clock) as object }),
    });
  const asUser = (name: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${users[name]!.token}` },
      ...(body === undefined ? {} : { payload: body as object }),
    });
  const entrance = async (who: string, context: Record<string, unknown>) => {
    const res = await api('POST', '/api/v1/auth', {
      auth_context: { type: 'entrance', ...context },
      palm: { template: tpl(who) },
    });
    expect(res.statusCode).toBe(200);
    return res.json().data as {
      auth_id: string;
      status: string;
      auth_result: { success: boolean; reason?: string; attributes: Record<string, unknown> };
    };
  };

  async function enrol(name: string, dob: string, consented: string[]) {
    const u = await seedUser(t.ctx);
    users[name] = u;
    const db = t.ctx.database.db;
    const dk = await dataKeyOf(t.ctx, db, u.userId);
    const template = new Uint8Array(Buffer.from(tpl(name), 'base64'));
    const palmId = await addPalm(t.ctx, db, u.userId, dk, { hand: 'right', template });
    t.ctx.gallery.add({ palmId, userId: u.userId, hand: 'right', template });
    await writeAttribute(t.ctx, db, u.userId, { name: 'date_of_birth', value: dob }, 'user', clock);
    await grantConsent(
      db,
      u.userId,
      {
        vendor_id: vendorId,
        attributes: consented.map((n) => ({ name: n, purpose: 'entry', retention_days: 0 })),
      },
      clock,
    );
  }

  beforeAll(async () => {
    t = await createTestApp({}, () => clock);
    const v = await seedVendor(t.ctx, 'Club Z');
    key = v.api_key;
    vendorId = v.vendor_id;
    device = await vendorDevice(t.ctx, vendorId);
    // 25 years old; exactly one day short of 21 (turns 21 tomorrow); consented but no membership.
    await enrol('alice', '2000-06-02', ['age_over_21', 'membership_status_in_set']);
    await enrol('bob', '2005-06-02', ['age_over_21']);
    await enrol('carol', '1990-01-01', []);
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await releaseZkResources();
  });

  it('publishes the service key derived from the master key, without an API key', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/keys/zk' });
    expect(res.statusCode).toBe(200);
    serviceKey = parseServicePublicKey(res.json().data);
    const master = Buffer.from(readFileSync(join(t.dir, 'master.key'), 'utf8').trim(), 'hex');
    expect(serviceKey).toEqual(deriveServiceKey(master).publicKey);
    expect(JSON.stringify(res.json())).not.toMatch(/"d"/);
    const openapi = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    for (const path of ['/api/v1/keys/zk', '/v1/attributes/verified', '/v1/attributes/import'])
      expect(openapi.paths[path], path).toBeDefined();
    expect(JSON.stringify(openapi.paths['/api/v1/auth/create'])).toContain('in_set');
  });

  let proof: PredicateProof;
  let authId: string;

  it('entrance with age_proof: age_over_21 and a proof that verifies offline; no birth date', async () => {
    const data = await entrance('alice', { minimum_age: 21, attributes_optional: ['age_proof'] });
    expect(data.status).toBe('completed');
    expect(data.auth_result.attributes.age_over_21).toBe(true);
    expect(JSON.stringify(data)).not.toContain('2000-06-02');
    expect(JSON.stringify(data)).not.toContain('20000602');
    proof = data.auth_result.attributes.age_proof as PredicateProof;
    authId = data.auth_id;
    expect(proof.statement).toMatchObject({
      auth_id: authId,
      predicate: { type: 'age_over', minimum_age: 21 },
    });
    const ok = await verifyPredicateProof(proof, {
      serviceKey,
      authId,
      minimumAge: 21,
      now: new Date(clock),
    });
    expect(ok).toMatchObject({ valid: true });
    // Consented with retention_days 0: the answer delivered it, the stored result keeps its name only.
    const status = (await api('GET', `/api/v1/auth/${authId}/status`)).json().data;
    expect(status.auth_result.attributes.age_proof).toBeUndefined();
    expect(status.auth_result.attributes_removed).toEqual(
      expect.arrayContaining(['age_over_21', 'age_proof']),
    );
  }, 60_000);

  it('keeps the commitment opening sealed under the user data key', async () => {
    const db = t.ctx.database.db;
    const [row] = await readOpenings(db, authId);
    expect(row?.commitment).toBe(proof.commitment);
    const dk = await dataKeyOf(t.ctx, db, users.alice!.userId);
    const opening = openFor(dk, users.alice!.userId, `zk-opening:${authId}:date_of_birth`, row!.opening_enc);
    expect(opening).toMatchObject({ attribute: 'date_of_birth', value: '2000-06-02' });
    expect(Buffer.from(row!.opening_enc).toString('latin1')).not.toContain('2000-06-02');
  });

  it('tampered proof, other auth id, other N, other key all fail', async () => {
    const now = new Date(clock);
    const tampered = structuredClone(proof);
    tampered.proof.pi_a[0] = (BigInt(tampered.proof.pi_a[0]!) + 1n).toString();
    expect(await verifyPredicateProof(tampered, { serviceKey, authId, minimumAge: 21, now })).toMatchObject({
      valid: false,
    });
    const other = await entrance('alice', { minimum_age: 21, attributes_optional: ['age_proof'] });
    expect(
      await verifyPredicateProof(proof, { serviceKey, authId: other.auth_id, minimumAge: 21, now }),
    ).toMatchObject({
      valid: false,
      reason: 'auth_id_mismatch',
    });
    expect(await verifyPredicateProof(proof, { serviceKey, authId, minimumAge: 22, now })).toMatchObject({
      valid: false,
      reason: 'predicate_mismatch',
    });
    expect(
      await verifyPredicateProof(proof, {
        serviceKey: generateServiceKey().publicKey,
        authId,
        minimumAge: 21,
        now,
      }),
    ).toMatchObject({ valid: false, reason: 'untrusted_service_key' });
  }, 60_000);

  it('proves outside the database transaction, so other queries are not held up', async () => {
    // count open transactions, and record how many were open whenever a proof starts
    const db = t.ctx.database.db;
    let open = 0;
    const atProof: number[] = [];
    const transaction = db.transaction;
    db.transaction = function (this: typeof db) {
      const builder = transaction.call(this);
      const execute = builder.execute.bind(builder);
      builder.execute = async (fn) => {
        open++;
        try {
          return await execute(fn);
        } finally {
          open--;
        }
      };
      return builder;
    } as typeof db.transaction;
    const keyring = t.ctx.keyring;
    const serviceKey = keyring.zkServiceKey;
    const own = Object.hasOwn(keyring, 'zkServiceKey');
    keyring.zkServiceKey = function (this: typeof keyring) {
      atProof.push(open);
      return serviceKey.call(this);
    };
    try {
      const data = await entrance('alice', { minimum_age: 21, attributes_optional: ['age_proof'] });
      expect(data.auth_result.attributes.age_proof).toBeDefined();
      expect(await readOpenings(db, data.auth_id)).toHaveLength(1);
    } finally {
      db.transaction = transaction;
      if (own) keyring.zkServiceKey = serviceKey;
      else delete (keyring as Partial<typeof keyring>).zkServiceKey;
    }
    expect(atProof.length).toBeGreaterThan(0);
    expect(atProof.every((n) => n === 0)).toBe(true);
  });

  it('a user aged N − 1 day gets age_over_N: false, underage, and no proof', async () => {
    const data = await entrance('bob', { minimum_age: 21, attributes_optional: ['age_proof'] });
    expect(data.status).toBe('failed');
    expect(data.auth_result.reason).toBe('underage');
    expect(data.auth_result.attributes).toEqual({ age_over_21: false });
    expect(await readOpenings(t.ctx.database.db, data.auth_id)).toHaveLength(0);
  });

  it('no proof without consent, and none unless asked for', async () => {
    const carol = await entrance('carol', { minimum_age: 18, attributes_optional: ['age_proof'] });
    expect(carol.auth_result).toMatchObject({ success: false, reason: 'consent_missing' });
    expect(carol.auth_result.attributes.age_proof).toBeUndefined();
    const plain = await entrance('alice', { minimum_age: 21 });
    expect(plain.auth_result.attributes).toEqual({ age_over_21: true });
  });

  it('validates predicates at creation', async () => {
    const bad = [
      { type: 'in_set', attribute: 'membership_status', values: [] },
      {
        type: 'in_set',
        attribute: 'membership_status',
        values: Array.from({ length: 9 }, (_, i) => `v${i}`),
      },
      { type: 'in_set', attribute: 'date_of_birth', values: ['x'] },
      { type: 'range', attribute: 'membership_status', values: ['x'] },
    ];
    for (const p of bad) {
      const res = await api('POST', '/api/v1/auth/create', {
        auth_context: { type: 'entrance', predicates: [p] },
      });
      expect(res.statusCode, JSON.stringify(p)).toBe(400);
    }
    const noAge = await api('POST', '/api/v1/auth/create', {
      auth_context: { type: 'entrance', attributes_optional: ['age_proof'] },
    });
    expect(noAge.statusCode).toBe(400);
    expect(noAge.json().error.details.field).toBe('auth_context.attributes_optional');
    const both = await api('POST', '/api/v1/auth/create', {
      auth_context: {
        type: 'entrance',
        attributes_optional: ['membership_status'],
        predicates: [{ type: 'in_set', attribute: 'membership_status', values: ['gold'] }],
      },
    });
    expect(both.statusCode).toBe(400);
  });

  describe('verified attributes and membership predicate', () => {
    let issuer: Awaited<ReturnType<typeof createVerifier>>;
    const signer = () => {
      const k = generateVerifierKey(issuer.verifier_id);
      return {
        ...k,
        kid: issuer.kid,
        publicKey: issuer.public_jwk,
        privateKey: createPrivateKey({ key: issuer.private_jwk, format: 'jwk' }),
      };
    };
    const attest = (subject: string, value: string, validUntil = new Date(clock + 30 * DAY)) =>
      createAttestation(signer(), {
        subject,
        attribute: 'membership_status',
        value,
        validUntil,
        issuedAt: new Date(clock - 1000),
      });

    beforeAll(async () => {
      issuer = await createVerifier(t.ctx.database.db, {
        name: 'Gym chain',
        attributes: ['membership_status', 'age_verified'],
      });
    });

    it('users cannot write verified kinds themselves', async () => {
      const res = await asUser('alice', 'PUT', '/v1/attributes/membership_status', { value: 'gold' });
      expect(res.statusCode).toBe(403);
    });

    it('expired attestation, another user, garbage: 400 with the reason; nothing stored', async () => {
      const expired = await asUser('alice', 'POST', '/v1/attributes/verified', {
        attestation: attest(users.alice!.userId, 'gold', new Date(clock - 2 * 60_000)),
      });
      expect(expired.statusCode).toBe(400);
      expect(expired.json().error.details).toMatchObject({ field: 'attestation', reason: 'expired' });
      const wrong = await asUser('alice', 'POST', '/v1/attributes/verified', {
        attestation: attest(users.bob!.userId, 'gold'),
      });
      expect(wrong.json().error.details.reason).toBe('wrong_subject');
      const garbage = await asUser('alice', 'POST', '/v1/attributes/verified', { attestation: 'a.b.c' });
      expect(garbage.statusCode).toBe(400);
      expect((await asUser('alice', 'GET', '/v1/attributes/membership_status')).statusCode).toBe(404);
    });

    it('a valid attestation stores the value with verified_by and the expiry', async () => {
      const res = await asUser('alice', 'POST', '/v1/attributes/verified', {
        attestation: attest(users.alice!.userId, 'gold'),
      });
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toMatchObject({
        name: 'membership_status',
        kind: 'verified',
        value: 'gold',
        verified_by: issuer.verifier_id,
        valid_until: new Date(Math.floor((clock + 30 * DAY) / 1000) * 1000).toISOString(),
      });
      const item = (await asUser('alice', 'GET', '/v1/attributes/membership_status')).json().data;
      expect(item).toMatchObject({ kind: 'verified', value: 'gold', verified_by: issuer.verifier_id });
    });

    it('in_set predicate: true with a proof that verifies; the value is never disclosed', async () => {
      const data = await entrance('alice', {
        predicates: [
          { type: 'in_set', attribute: 'membership_status', values: ['gold', 'platinum', 'diamond'] },
        ],
      });
      expect(data.status).toBe('completed');
      expect(data.auth_result.attributes.membership_status_in_set).toBe(true);
      expect(data.auth_result.attributes.membership_status).toBeUndefined();
      const p = data.auth_result.attributes.membership_status_proof as PredicateProof;
      const ok = await verifyPredicateProof(p, {
        serviceKey,
        authId: data.auth_id,
        inSet: { attribute: 'membership_status', values: ['gold', 'platinum', 'diamond'] },
        now: new Date(clock),
      });
      expect(ok).toMatchObject({ valid: true });
      // A vendor that accepts only platinum does not accept this proof.
      const narrower = await verifyPredicateProof(p, {
        serviceKey,
        authId: data.auth_id,
        inSet: { attribute: 'membership_status', values: ['platinum'] },
        now: new Date(clock),
      });
      expect(narrower).toMatchObject({ valid: false, reason: 'predicate_mismatch' });
    }, 60_000);

    it('in_set false: no proof; without consent: consent_missing', async () => {
      const no = await entrance('alice', {
        predicates: [
          { type: 'in_set', attribute: 'membership_status', values: ['platinum', 'diamond', 'silver'] },
        ],
      });
      expect(no.auth_result.attributes).toEqual({ membership_status_in_set: false });
      const bob = await entrance('bob', {
        predicates: [{ type: 'in_set', attribute: 'membership_status', values: ['gold'] }],
      });
      expect(bob.auth_result).toMatchObject({ success: false, reason: 'consent_missing' });
    });

    it('an attested value past its expiry proves nothing', async () => {
      // Dave's membership was attested earlier and expired a second ago: it is not disclosed or proved.
      await enrol('dave', '1980-01-01', ['membership_status_in_set']);
      await writeAttribute(
        t.ctx,
        t.ctx.database.db,
        users.dave!.userId,
        {
          name: 'membership_status',
          value: 'gold',
          validUntil: clock - 1000,
          verifiedBy: issuer.verifier_id,
        },
        'trusted',
        clock - 30 * DAY,
      );
      const data = await entrance('dave', {
        predicates: [
          { type: 'in_set', attribute: 'membership_status', values: ['gold', 'silver', 'bronze'] },
        ],
      });
      expect(data.auth_result).toMatchObject({ success: false, reason: 'consent_missing' });
      expect(data.auth_result.attributes.membership_status_proof).toBeUndefined();
      expect(await readOpenings(t.ctx.database.db, data.auth_id)).toHaveLength(0);
    });

    it('a revoked verifier is refused (403)', async () => {
      await revokeVerifier(t.ctx.database.db, issuer.verifier_id, clock - 1000);
      const res = await asUser('alice', 'POST', '/v1/attributes/verified', {
        attestation: attest(users.alice!.userId, 'platinum'),
      });
      expect(res.statusCode).toBe(403);
      expect(res.json().error.details.reason).toBe('revoked_issuer');
    });
  });

  it('proving stays within budget inside the request (median of this run, informative)', () => {
    const ms = [...proofTimings.last_ms].sort((a, b) => a - b);
    expect(ms.length).toBeGreaterThan(2);
    // eslint-disable-next-line no-console
    console.log(
      `zk proofs in the server flow: n=${ms.length} median ${ms[Math.floor(ms.length / 2)]!.toFixed(0)} ms, max ${ms.at(-1)!.toFixed(0)} ms (first includes warm-up)`,
    );
  });

  it('a consent revoked between proving and writing is honoured: no proof, consent_missing', async () => {
    const db = t.ctx.database.db;
    const vendor = { id: vendorId, name: 'Club Z', scopes: ['auth'] } as never;
    const row = await db.transaction().execute((trx) =>
      createAuthContext(t.ctx, trx, vendor, {
        type: 'entrance',
        minimum_age: 21,
        attributes_optional: ['age_proof'],
      } as never),
    );
    // resolveWithPalm called directly: the capture is taken as verified (the REST and kiosk paths verify it)
    const palm = {
      template: new Uint8Array(Buffer.from(tpl('alice'), 'base64')),
      capture: { ok: true as const, deviceId: device.pvsId },
    };
    const seen = identifyPalm(t.ctx, palm);
    const prepared = await prepareProofs(t.ctx, row, seen);
    expect([...prepared.proofs.values()].filter(Boolean)).toHaveLength(1);
    const alice = users.alice!.userId;
    for (const c of await listConsents(db, alice, clock)) await revokeConsent(db, alice, c.consent_id, clock);
    const res = await db
      .transaction()
      .execute(async (trx) =>
        resolveWithPalm(t.ctx, trx, (await loadContext(trx, row.id))!, seen, CALLER, prepared),
      );
    expect(res.result).toMatchObject({ success: false, reason: 'consent_missing' });
    expect(res.result.attributes).toEqual({});
    expect(await readOpenings(db, row.id)).toHaveLength(0);
  });
  it('the age proof names its birth date source; minimum_age_source "verified" refuses a self-asserted one', async () => {
    await enrol('dora', '1990-01-01', ['age_over_21']);
    const now = new Date(clock);
    const self = await entrance('dora', { minimum_age: 21, attributes_optional: ['age_proof'] });
    expect(self.status).toBe('completed');
    const selfProof = self.auth_result.attributes.age_proof as PredicateProof;
    expect(selfProof.statement.source).toBe('self_asserted');
    const expectAt = { serviceKey, authId: self.auth_id, minimumAge: 21, now };
    expect(await verifyPredicateProof(selfProof, expectAt)).toMatchObject({ valid: true });
    // the source is signed: claiming a verifier instead breaks the signature
    const forged = { ...selfProof, statement: { ...selfProof.statement, source: 'https://idp.example' } };
    expect(await verifyPredicateProof(forged, expectAt)).toMatchObject({ valid: false });

    const strict = await entrance('dora', { minimum_age: 21, minimum_age_source: 'verified' });
    expect(strict.status).toBe('failed');
    expect(strict.auth_result.reason).toBe('consent_missing');
    expect(strict.auth_result.attributes.age_over_21).toBeUndefined();

    await markAttributeVerified(
      t.ctx.database.db,
      users.dora!.userId,
      'date_of_birth',
      'https://idp.example',
    );
    const verified = await entrance('dora', {
      minimum_age: 21,
      minimum_age_source: 'verified',
      attributes_optional: ['age_proof'],
    });
    expect(verified.status).toBe('completed');
    expect(verified.auth_result.attributes.age_over_21).toBe(true);
    const verifiedProof = verified.auth_result.attributes.age_proof as PredicateProof;
    expect(verifiedProof.statement.source).toBe('https://idp.example');
    expect(
      await verifyPredicateProof(verifiedProof, { ...expectAt, authId: verified.auth_id }),
    ).toMatchObject({ valid: true });
    const bad = await api('POST', '/api/v1/auth/create', {
      auth_context: { type: 'entrance', minimum_age_source: 'verified' },
    });
    expect(bad.statusCode).toBe(400);
  }, 60_000);
  it('a consent to <attr>_in_set names its set, or admits only sets of 3 or more; any other set: consent_missing', async () => {
    await enrol('erin', '1985-01-01', []);
    await writeAttribute(
      t.ctx,
      t.ctx.database.db,
      users.erin!.userId,
      { name: 'country', value: 'DE' },
      'user',
      clock,
    );
    const consent = (attributes: unknown[]) =>
      asUser('erin', 'POST', '/v1/consents', { vendor_id: vendorId, attributes });
    const bad = await consent([{ name: 'country', purpose: 'x', retention_days: 0, values: ['DE'] }]);
    expect(bad.statusCode).toBe(400);
    const tooSmall = await consent([
      { name: 'country_in_set', purpose: 'x', retention_days: 0, min_set_size: 2 },
    ]);
    expect(tooSmall.statusCode).toBe(400);
    const named = await consent([
      { name: 'country_in_set', purpose: 'EU check', retention_days: 0, values: ['DE', 'FR', 'IT'] },
    ]);
    expect(named.statusCode, named.body).toBe(201);
    const ask = (values: string[]) =>
      entrance('erin', { predicates: [{ type: 'in_set', attribute: 'country', values, proof: false }] });
    const same = await ask(['IT', 'DE', 'FR']);
    expect(same.status).toBe('completed');
    expect(same.auth_result.attributes).toEqual({ country_in_set: true });
    for (const other of [['DE'], ['DE', 'FR'], ['DE', 'FR', 'IT', 'ES']]) {
      const res = await ask(other);
      expect(res.auth_result, other.join(',')).toMatchObject({ success: false, reason: 'consent_missing' });
      expect(res.auth_result.attributes.country_in_set).toBeUndefined();
    }
    // replaced by a consent without a named set: the default minimum of 3 values
    const revoke = await asUser('erin', 'DELETE', `/v1/consents/${named.json().data.consent_id}`);
    expect(revoke.statusCode).toBe(200);
    expect(
      (await consent([{ name: 'country_in_set', purpose: 'EU check', retention_days: 0 }])).statusCode,
    ).toBe(201);
    expect((await ask(['DE'])).auth_result).toMatchObject({ success: false, reason: 'consent_missing' });
    expect((await ask(['DE', 'AT', 'CH'])).auth_result).toMatchObject({
      success: true,
      attributes: { country_in_set: true },
    });
  });
});
