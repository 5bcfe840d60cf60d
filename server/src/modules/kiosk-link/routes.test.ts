import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, FrameClient, seedVendor, type TestApp, TestDevice } from '../../../dev/testing.ts';
import { open } from '../../crypto/keyring.ts';
import { createPvs } from '../pvs/service.ts';
import { issueUserToken } from '../users/service.ts';
import { pruneAnswers, recallAnswer, rememberAnswer } from './idempotency.ts';

const TEMPLATE = Buffer.from('kiosk-enrolled-palm-0001').toString('base64');

describe('/ws/pvs and /ws/vendor', () => {
  let t: TestApp;
  let base: string;
  let vendor: { vendor_id: string; api_key: string };
  let kiosk: { pvs_id: string; device_token: string; provisioning_secret: string };

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `ws://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    vendor = await seedVendor(t.ctx, 'Kiosk Vendor');
    kiosk = await createPvs(t.ctx.database.db, { name: 'front door' });
  });
  afterAll(() => t.close());

  it('closes with 1008 on a bad device token or vendor key', async () => {
    for (const [path, headers] of [
      ['/ws/pvs', { authorization: 'Bearer pvs_nope' }],
      ['/ws/vendor', { 'x-api-key': 'sk_test_nope' }],
    ] as const) {
      const c = await FrameClient.open(`${base}${path}`, headers);
      const code = await new Promise<number>((r) => c.ws.once('close', (code) => r(code)));
      expect(code).toBe(1008);
    }
  });

  it('answers bad frames with INVALID_REQUEST and keeps the connection', async () => {
    const c = await FrameClient.open(`${base}/ws/pvs`, { authorization: `Bearer ${kiosk.device_token}` });
    c.ws.send('{not json');
    const e1 = await c.next((f) => 'error' in f);
    expect((e1.error as { code: string }).code).toBe('INVALID_REQUEST');
    const e2 = await c.call('x1', 'identify', {
      auth_id: 'nope',
      template: TEMPLATE,
      hand: 'left',
      quality: 1,
      liveness: 1,
    });
    expect(e2.error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'params.auth_id' } });
    const e3 = await c.call('x2', 'teleport', {});
    expect((e3.error as { code: string }).code).toBe('NOT_FOUND');
    const hb = await c.call('x3', 'heartbeat', {});
    expect(hb.result).toHaveProperty('time');
    c.ws.close();
  });

  it('enrols, then a vendor context reaches the kiosk and the vendor socket sees it complete', async () => {
    const k = await FrameClient.open(`${base}/ws/pvs`, { authorization: `Bearer ${kiosk.device_token}` });
    const device = new TestDevice(kiosk.pvs_id);
    // without the provisioning secret the key is not bound, and an unattested enrolment is refused
    const unbound = await k.hello('h0', device);
    expect(unbound.result).toMatchObject({ device_key: 'unbound' });
    const refused = await k.call('e0', 'enroll', {
      template: TEMPLATE,
      hand: 'right',
      quality: 0.9,
      liveness: 0.95,
    });
    expect(refused.error).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'attestation_failed' } });
    const hello = await k.hello('h1', device, { provisioning_secret: kiosk.provisioning_secret });
    expect(hello.result).toMatchObject({ pvs_id: kiosk.pvs_id, vendor_id: null, device_key: 'bound' });
    // the secret is single-use and another key is refused once one is bound
    const intruder = await k.hello('h2', new TestDevice(kiosk.pvs_id), {
      provisioning_secret: kiosk.provisioning_secret,
    });
    expect(intruder.error).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'device_key_mismatch' } });

    const enrolled = await k.enroll('e1', device, [{ template: TEMPLATE, hand: 'right', liveness: 0.95 }]);
    const { user_id, claim_code } = enrolled.result as { user_id: string; claim_code: string };
    expect(claim_code).toMatch(/^[A-Z2-9]{5}-[A-Z2-9]{5}$/);
    // replaying the same request id does not enrol twice
    const replay = await k.enroll('e1', device, [{ template: TEMPLATE, hand: 'right', liveness: 0.95 }]);
    expect((replay.result as { user_id: string }).user_id).toBe(user_id);
    expect(
      await t.ctx.database.db.selectFrom('users').select('id').where('id', '=', user_id).execute(),
    ).toHaveLength(1);

    const v = await FrameClient.open(`${base}/ws/vendor`, { 'x-api-key': vendor.api_key });
    const pong = await v.call('p1', 'ping', {});
    expect(pong.result).toMatchObject({ pong: true });

    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': vendor.api_key },
      payload: { auth_context: { type: 'payment', amount: 300 } },
    });
    const authId = created.json().data.auth_id as string;
    const req = await k.next((f) => f.method === 'scan.request');
    expect(req.params).toMatchObject({ auth_id: authId, type: 'payment', amount: 300, currency: 'EUR' });
    expect((req.params as { display: string }).display).toContain('3.00 EUR');
    const scanning = await v.next(
      (f) => f.method === 'auth.updated' && (f.params as { status: string }).status === 'scanning',
    );
    expect(scanning.params).toMatchObject({ auth_id: authId });

    expect((req.params as { nonce: string }).nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const idf = await k.identify('i1', device, { auth_id: authId, template: TEMPLATE });
    expect(idf.error).toBeUndefined();
    expect(idf.result).toEqual({ status: 'completed', success: true });
    const done = await v.next(
      (f) => f.method === 'auth.updated' && (f.params as { status: string }).status === 'completed',
    );
    expect(done.params).toMatchObject({ auth_id: authId, auth_result: { success: true } });
    // identify replay returns the same answer, not an error about a terminal context
    const again = await k.identify('i1', device, { auth_id: authId, template: TEMPLATE });
    expect(again.result).toEqual(idf.result);
    const sub = await v.call('s1', 'subscribe', { auth_id: authId });
    expect(sub.result).toMatchObject({ auth_id: authId, status: 'completed' });
    k.ws.close();
    v.ws.close();
  });

  it("seals kiosk answers under the user's data key; delete-me leaves none; expired ones are pruned", async () => {
    const desk = await createPvs(t.ctx.database.db, { name: 'erasure desk' });
    const k = await FrameClient.open(`${base}/ws/pvs`, { authorization: `Bearer ${desk.device_token}` });
    const device = new TestDevice(desk.pvs_id);
    await k.hello('h', device, { provisioning_secret: desk.provisioning_secret, mode: 'enrol' });
    const enrolled = await k.enroll('erase-1', device, [
      { template: Buffer.from('kiosk-palm-to-erase-0002').toString('base64'), hand: 'left', liveness: 0.95 },
    ]);
    k.ws.close();
    const { user_id } = enrolled.result as { user_id: string };
    const db = t.ctx.database.db;
    const key = `pvs:${desk.pvs_id}:enroll:erase-1`;
    const row = await db
      .selectFrom('idempotency')
      .selectAll()
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
    expect(row.user_id).toBe(user_id);
    // not under the service's own key: only the user's data key opens it
    expect(() =>
      open(t.ctx.keyring.derive('idempotency'), Buffer.from(row.response, 'base64'), key),
    ).toThrow();
    expect(await recallAnswer(t.ctx, db, key)).toMatchObject({ user_id });

    const { user_token } = await issueUserToken(t.ctx, db, user_id);
    const erased = await t.app.inject({
      method: 'DELETE',
      url: '/v1/gdpr/delete-me',
      headers: { authorization: `Bearer ${user_token}` },
    });
    expect(erased.statusCode, erased.body).toBe(200);
    expect(await db.selectFrom('idempotency').selectAll().where('user_id', '=', user_id).execute()).toEqual(
      [],
    );
    expect(await recallAnswer(t.ctx, db, key)).toBeUndefined();

    const dayAgo = { ...t.ctx, now: () => Date.now() - 25 * 3600_000 };
    await rememberAnswer(dayAgo, db, 'pvs:x:identify:old', { status: 'failed' });
    await rememberAnswer(t.ctx, db, 'pvs:x:identify:new', { status: 'failed' });
    expect(await pruneAnswers(t.ctx)).toBeGreaterThanOrEqual(1);
    const left = (await db.selectFrom('idempotency').select('key').execute()).map((r) => r.key);
    expect(left).not.toContain('pvs:x:identify:old');
    expect(left).toContain('pvs:x:identify:new');
  });

  it("a vendor's kiosk never receives another vendor's contexts", async () => {
    const other = await seedVendor(t.ctx, 'Other Vendor');
    const own = await createPvs(t.ctx.database.db, { name: 'own kiosk', vendorId: vendor.vendor_id });
    const k = await FrameClient.open(`${base}/ws/pvs`, { authorization: `Bearer ${own.device_token}` });
    const device = new TestDevice(own.pvs_id);
    await k.hello('h', device, { provisioning_secret: own.provisioning_secret });
    const theirs = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': other.api_key },
      payload: { auth_context: { type: 'login' } },
    });
    const ours = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': vendor.api_key },
      payload: { auth_context: { type: 'login', pvs_id: own.pvs_id } },
    });
    const req = await k.next((f) => f.method === 'scan.request');
    expect((req.params as { auth_id: string }).auth_id).toBe(ours.json().data.auth_id);
    const theirId = theirs.json().data.auth_id as string;
    expect(k.frames.some((f) => (f.params as { auth_id?: string } | undefined)?.auth_id === theirId)).toBe(
      false,
    );
    const steal = await k.call('i', 'identify', {
      auth_id: theirId,
      template: TEMPLATE,
      hand: 'right',
      quality: 1,
      liveness: 1,
      attestation: device.attest('identify', theirId, 'AAAAAAAAAAAAAAAAAAAAAA', { template: TEMPLATE }),
    });
    expect((steal.error as { code: string }).code).toBe('NOT_FOUND');
    // and a vendor cannot target another vendor's kiosk
    const forbidden = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': other.api_key },
      payload: { auth_context: { type: 'login', pvs_id: own.pvs_id } },
    });
    expect(forbidden.statusCode).toBe(403);
    k.ws.close();
  });

  it('locks a kiosk after repeated failed matches', async () => {
    const lk = await createPvs(t.ctx.database.db, { name: 'lock kiosk' });
    const k = await FrameClient.open(`${base}/ws/pvs`, { authorization: `Bearer ${lk.device_token}` });
    const device = new TestDevice(lk.pvs_id);
    await k.hello('h', device, { provisioning_secret: lk.provisioning_secret });
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) {
      const c = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/create',
        headers: { 'x-api-key': vendor.api_key },
        payload: { auth_context: { type: 'login', pvs_id: lk.pvs_id } },
      });
      const r = await k.identify(`i${i}`, device, {
        auth_id: c.json().data.auth_id,
        template: Buffer.from(`unknown-palm-${i}-xxxxxxx`).toString('base64'),
        hand: 'left',
        quality: 1,
        liveness: 1,
      });
      codes.push(r.error ? (r.error as { code: string }).code : (r.result as { reason: string }).reason);
    }
    expect(codes).toEqual(['no_match', 'no_match', 'no_match', 'no_match', 'no_match', 'RATE_LIMITED']);
    k.ws.close();
  });

  it('fails a context whose capture is unattested, replayed or mis-signed, and never matches it', async () => {
    const ak = await createPvs(t.ctx.database.db, { name: 'attest kiosk' });
    const k = await FrameClient.open(`${base}/ws/pvs`, { authorization: `Bearer ${ak.device_token}` });
    const device = new TestDevice(ak.pvs_id);
    await k.hello('h', device, { provisioning_secret: ak.provisioning_secret });
    const context = async () => {
      const c = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/create',
        headers: { 'x-api-key': vendor.api_key },
        payload: { auth_context: { type: 'login', pvs_id: ak.pvs_id } },
      });
      const authId = c.json().data.auth_id as string;
      return { authId, nonce: await k.nonceFor(authId) };
    };
    const sample = { template: TEMPLATE, hand: 'right' as const, quality: 0.9, liveness: 0.9 };
    const reasonOf = (r: Record<string, unknown>) => r.result as { reason?: string; success: boolean };

    const a = await context();
    expect(reasonOf(await k.call('n1', 'identify', { auth_id: a.authId, ...sample })).reason).toBe(
      'attestation_failed',
    );
    // a valid capture of context b, replayed on context c (its nonce is b's) and then on b again
    const b = await context();
    const signed = {
      auth_id: b.authId,
      ...sample,
      attestation: device.attest('identify', b.authId, b.nonce, sample),
    };
    expect(reasonOf(await k.call('n2', 'identify', signed))).toMatchObject({ success: true });
    const c = await context();
    expect(reasonOf(await k.call('n3', 'identify', { ...signed, auth_id: c.authId })).reason).toBe(
      'attestation_failed',
    );
    // another key (not the registered one)
    const d = await context();
    const stranger = new TestDevice(ak.pvs_id);
    expect(
      reasonOf(
        await k.call('n4', 'identify', {
          auth_id: d.authId,
          ...sample,
          attestation: stranger.attest('identify', d.authId, d.nonce, sample),
        }),
      ).reason,
    ).toBe('attestation_failed');
    const audit = await t.ctx.database.db
      .selectFrom('audit')
      .selectAll()
      .where('user_id', '=', `device:${ak.pvs_id}`)
      .execute();
    expect(audit.length).toBe(3);
    expect(audit.every((r) => r.attribute_name === 'capture_attestation' && r.result === 'DENIED')).toBe(
      true,
    );
    k.ws.close();
  });
});
