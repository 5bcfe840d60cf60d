import { pseudonym } from '@palmid/contracts/crypto/ids';
import {
  attestBody,
  attestPalms,
  type ExactGallery,
  FrameClient,
  seedVendor,
  TestDevice,
  vendorDevice,
} from '@palmid/server/dev/testing';
import { expireOverdue } from '@palmid/server/modules/auth-contexts/state';
import { eraseUser } from '@palmid/server/modules/gdpr/service';
import { createPvs } from '@palmid/server/modules/pvs/service';
import { addPalm, createUser, palmsOf, removePalm } from '@palmid/server/modules/users/service';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeNeeding } from '../support/requirements.ts';
import { type Cluster, clusterUnavailable, eventually, startCluster } from './cluster.ts';

/**
 * Two stateless server instances on one store and one Redis (issue 7): what a user of either instance
 * notices must not depend on which instance answers.
 */

const tpl = (s: string) => Buffer.from(s.padEnd(24, '.')).toString('base64');

describeNeeding(clusterUnavailable())('two instances sharing a store and Redis', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster(2);
  }, 60_000);
  afterAll(() => c?.stop());

  const A = () => c.instances[0]!;
  const B = () => c.instances[1]!;

  it('rate limits hold across instances: the sum of accepted requests never exceeds the limit', async () => {
    const v = await seedVendor(A().ctx, 'Busy Vendor');
    const headers = { 'x-api-key': v.api_key };
    // 160 concurrent requests, alternating between the instances; /api/v1/status allows 100/min per key.
    const responses = await Promise.all(
      Array.from({ length: 160 }, (_, i) =>
        (i % 2 === 0 ? A() : B()).app.inject({ method: 'GET', url: '/api/v1/status', headers }),
      ),
    );
    const accepted = responses.filter((r) => r.statusCode === 200);
    const refused = responses.filter((r) => r.statusCode === 429);
    expect(accepted.length).toBe(100);
    expect(refused.length).toBe(60);
    expect(refused[0]!.headers['retry-after']).toBeTruthy();
    // Both instances did accept some: the counter is shared, not split.
    const acceptedBy = (n: number) => responses.filter((r, i) => i % 2 === n && r.statusCode === 200).length;
    expect(acceptedBy(0)).toBeGreaterThan(0);
    expect(acceptedBy(1)).toBeGreaterThan(0);
    const remaining = accepted.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('an auth context changed on A reaches the vendor socket on B', async () => {
    const v = await seedVendor(A().ctx, 'Listening Vendor');
    const sock = await FrameClient.open(`${c.bases[1]}/ws/vendor`, { 'x-api-key': v.api_key });
    expect((await sock.call('p', 'ping', {})).result).toMatchObject({ pong: true });
    const created = await A().app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': v.api_key },
      payload: { auth_context: { type: 'login' } },
    });
    const authId = created.json().data.auth_id as string;
    await A().app.inject({
      method: 'POST',
      url: `/api/v1/auth/${authId}/cancel`,
      headers: { 'x-api-key': v.api_key },
    });
    const update = await sock.next((f) => f.method === 'auth.updated');
    expect(update.params).toMatchObject({ auth_id: authId, status: 'cancelled' });
    sock.close();
  });

  it('a user enrolled via A is identified via B, and erased via A is gone on B', async () => {
    const v = await seedVendor(A().ctx, 'Enrolling Vendor');
    const headers = { 'x-api-key': v.api_key };
    // the vendor's capture host, registered via A; its key and counter are shared by both instances
    const device = await vendorDevice(A().ctx, v.vendor_id);
    const created = await A().app.inject({
      method: 'POST',
      url: '/api/v1/mpc/users/create',
      headers,
      payload: { palms: attestPalms(device, [{ hand: 'left' as const, template: tpl('multi-left') }]) },
    });
    // the vendor holds its own id for the user; the gallery and the pseudonym use the internal one
    const vendorUserId = created.json().data.user_id as string;
    const userId = (
      await A().app.inject({
        method: 'GET',
        url: '/v1/attributes/user_id',
        headers: { authorization: `Bearer ${created.json().data.user_token}` },
      })
    ).json().data.value as string;
    const identifyOnB = async () => {
      const res = await B().app.inject({
        method: 'POST',
        url: '/api/v1/auth',
        headers,
        payload: attestBody(device, {
          auth_context: { type: 'login' },
          palm: { template: tpl('multi-left'), liveness: 0.99 },
        }),
      });
      return res.json().data.auth_result as { success: boolean; user_id: string | null; reason?: string };
    };
    await eventually(async () => (await identifyOnB()).success);
    expect((await identifyOnB()).user_id).toBe(pseudonym(userId, v.vendor_id));
    // Neither instance holds the palm twice (A skips its own event; B loaded it once).
    const held = (n: 0 | 1) =>
      (c.instances[n]!.ctx.gallery as ExactGallery).entries.filter((e) => e.userId === userId).length;
    expect(held(0)).toBe(1);
    expect(held(1)).toBe(1);

    // A second palm added on B (with the user's confirmation code) reaches A, still without duplicates.
    const confirm = await B().app.inject({
      method: 'POST',
      url: '/v1/palms/confirm',
      headers: { authorization: `Bearer ${created.json().data.user_token}` },
    });
    const updated = await B().app.inject({
      method: 'POST',
      url: '/api/v1/mpc/users/update',
      headers,
      payload: {
        user_id: vendorUserId,
        palms: attestPalms(device, [{ hand: 'right' as const, template: tpl('multi-right') }]),
        confirmation_code: confirm.json().data.confirmation_code,
      },
    });
    expect(updated.statusCode).toBe(200);
    await eventually(() => held(0) === 2);
    expect(held(1)).toBe(2);

    // The user removes the first palm on A (DELETE /v1/palms/{id}): B stops matching it too.
    const userAuth = { authorization: `Bearer ${created.json().data.user_token}` };
    const palms = (await A().app.inject({ method: 'GET', url: '/v1/palms', headers: userAuth })).json().data
      .palms as { palm_id: string; hand: string }[];
    const left = palms.find((p) => p.hand === 'left')!;
    const removed = await A().app.inject({
      method: 'DELETE',
      url: `/v1/palms/${left.palm_id}`,
      headers: userAuth,
    });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(held(0)).toBe(1);
    await eventually(() => held(1) === 1);
    expect(await identifyOnB()).toMatchObject({ success: false, reason: 'no_match' });

    await A().app.inject({
      method: 'POST',
      url: '/api/v1/mpc/users/delete',
      headers,
      payload: { user_id: vendorUserId },
    });
    await eventually(() => held(1) === 0);
    expect(held(0)).toBe(0);
  });

  it('changes missed while cut off from Redis are caught up from the store after reconnecting', async () => {
    const held = (n: 0 | 1, userId: string) =>
      (c.instances[n]!.ctx.gallery as ExactGallery).entries.filter((e) => e.userId === userId).length;
    // Written to the store without any event: as if the event had been published during the outage.
    const db = A().ctx.database.db;
    const user = await db.transaction().execute(async (trx) => {
      const u = await createUser(A().ctx, trx, null);
      await addPalm(A().ctx, trx, u.id, u.dataKey, {
        hand: 'left',
        template: new Uint8Array(Buffer.from('missed-event-palm-000001')),
      });
      return u;
    });
    expect(held(1, user.id)).toBe(0);
    const admin = new Redis(c.redisUrl);
    try {
      await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub'); // every instance's subscriber drops and reconnects
      await eventually(() => held(1, user.id) === 1 && held(0, user.id) === 1);
      // a second palm, then the first removed, both without events: caught up as one palm
      const second = await db.transaction().execute((trx) =>
        addPalm(A().ctx, trx, user.id, user.dataKey, {
          hand: 'right',
          template: new Uint8Array(Buffer.from('missed-event-palm-000002')),
        }),
      );
      await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await eventually(() => held(1, user.id) === 2 && held(0, user.id) === 2);
      const [first] = (await palmsOf(db, user.id)).filter((p) => p.id !== second);
      await db.transaction().execute((trx) => removePalm(trx, user.id, first!.id, Date.now()));
      await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await eventually(() => held(1, user.id) === 1 && held(0, user.id) === 1);
      await db.transaction().execute((trx) => eraseUser(A().ctx, trx, user.id));
      await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await eventually(() => held(1, user.id) === 0 && held(0, user.id) === 0);
    } finally {
      admin.disconnect();
    }
  });

  it('a context expires once although every instance sweeps', async () => {
    const v = await seedVendor(A().ctx, 'Expiring Vendor');
    const created = await A().app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': v.api_key },
      payload: { auth_context: { type: 'login', expires_in_s: 1 } },
    });
    const authId = created.json().data.auth_id as string;
    await new Promise((r) => setTimeout(r, 1100));
    const [a, b] = await Promise.all([expireOverdue(A().ctx), expireOverdue(B().ctx)]);
    // Only the sweeper that made the change reports it, so the vendor is notified once.
    expect([...a, ...b].filter((row) => row.id === authId)).toHaveLength(1);
  });

  it('the direct path lockout holds across instances: 5 no_match on A lock the device and key on B', async () => {
    const v = await seedVendor(A().ctx, 'Locked Vendor');
    const device = await vendorDevice(A().ctx, v.vendor_id);
    const headers = { 'x-api-key': v.api_key };
    const attempt = (n: 0 | 1, i: number) =>
      c.instances[n]!.app.inject({
        method: 'POST',
        url: '/api/v1/auth',
        headers,
        payload: attestBody(device, {
          auth_context: { type: 'login' },
          palm: { template: tpl(`nobody-${i}`), liveness: 0.99 },
        }),
      });
    for (let i = 0; i < 5; i++) expect((await attempt(0, i)).json().data.auth_result.reason).toBe('no_match');
    const onB = await attempt(1, 5);
    expect(onB.statusCode).toBe(429);
    expect(onB.json().error.details.reason).toBe('capture_locked');
  });

  it('a kiosk on A serves a context created on B whose vendor listens on B', async () => {
    const v = await seedVendor(B().ctx, 'Kiosk Vendor');
    const kiosk = await createPvs(A().ctx.database.db, { name: 'kiosk on A', vendorId: v.vendor_id });
    const k = await FrameClient.open(`${c.bases[0]}/ws/pvs`, {
      authorization: `Bearer ${kiosk.device_token}`,
    });
    const device = new TestDevice(kiosk.pvs_id);
    await k.hello('h', device, { provisioning_secret: kiosk.provisioning_secret });
    const sock = await FrameClient.open(`${c.bases[1]}/ws/vendor`, { 'x-api-key': v.api_key });
    await sock.call('p', 'ping', {});

    // Enrolment happens elsewhere (an enrolment kiosk on B); the palm must be known on A too.
    const enrolKiosk = await createPvs(B().ctx.database.db, { name: 'enrolment on B' });
    const e = await FrameClient.open(`${c.bases[1]}/ws/pvs`, {
      authorization: `Bearer ${enrolKiosk.device_token}`,
    });
    const enrolDevice = new TestDevice(enrolKiosk.pvs_id);
    await e.hello('h', enrolDevice, { provisioning_secret: enrolKiosk.provisioning_secret });
    const enrolled = await e.enroll('e1', enrolDevice, [{ template: tpl('kiosk-palm'), liveness: 0.95 }]);
    const userId = (enrolled.result as { user_id: string }).user_id;
    await eventually(() => (A().ctx.gallery as ExactGallery).entries.some((x) => x.userId === userId));

    const created = await B().app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': v.api_key },
      // Addressed to the kiosk on A: the unbound enrolment kiosk on B would otherwise compete for it.
      payload: { auth_context: { type: 'payment', amount: 450, pvs_id: kiosk.pvs_id } },
    });
    const authId = created.json().data.auth_id as string;
    const req = await k.next((f) => f.method === 'scan.request');
    expect(req.params).toMatchObject({ auth_id: authId, amount: 450 });
    await sock.next(
      (f) => f.method === 'auth.updated' && (f.params as { status: string }).status === 'scanning',
    );
    const idf = await k.identify('i1', device, { auth_id: authId, template: tpl('kiosk-palm') });
    expect(idf.result).toEqual({ status: 'completed', success: true });
    const done = await sock.next(
      (f) => f.method === 'auth.updated' && (f.params as { status: string }).status === 'completed',
    );
    expect(done.params).toMatchObject({
      auth_id: authId,
      auth_result: { success: true, user_id: pseudonym(userId, v.vendor_id) },
    });
    const status = await B().app.inject({
      method: 'GET',
      url: `/api/v1/auth/${authId}/status`,
      headers: { 'x-api-key': v.api_key },
    });
    expect(status.json().data.status).toBe('completed');
    for (const x of [k, sock, e]) x.close();
  });
});
