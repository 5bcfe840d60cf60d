import { renderRoi } from '@palmid/firmware-sim/synth/roi';
import { extractRoiTemplate } from '@palmid/palm/capture/roi-template';
import { createGallery, createMatcher } from '@palmid/palm/gallery/gallery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, FrameClient, seedVendor, type TestApp, TestDevice } from '../../../dev/testing.ts';
import { createPvs } from '../pvs/service.ts';

/**
 * A kiosk on a camera profile may send a capture whose hand side it could not decide: `identify` without
 * `hand`, the template's header `unknown` (docs/palm-pipeline.md, "Left/right"; docs/websocket.md). The
 * server's 1:N search, which looks only at the probe's side when it is known, must then search both
 * hands' palms. Real matcher and two-stage gallery, real WebSocket.
 */
describe('identify with a capture of undecided hand side', () => {
  let t: TestApp;
  let base: string;
  let vendor: { vendor_id: string; api_key: string };
  let kiosk: { pvs_id: string; device_token: string; provisioning_secret: string };
  let k: FrameClient;
  let dev: TestDevice;
  const palm = async (identity: string, session: 1 | 2, hand: 'left' | 'right' | 'unknown') =>
    Buffer.from(
      await extractRoiTemplate(renderRoi({ identity, style: 'contact', session, sample: session }), { hand }),
    ).toString('base64');

  beforeAll(async () => {
    t = await createTestApp({}, undefined, { matcher: createMatcher(), gallery: createGallery() });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `ws://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
    vendor = await seedVendor(t.ctx, 'Side Vendor');
    kiosk = await createPvs(t.ctx.database.db, { name: 'camera kiosk' });
    k = await FrameClient.open(`${base}/ws/pvs`, { authorization: `Bearer ${kiosk.device_token}` });
    dev = new TestDevice(kiosk.pvs_id);
    const hello = await k.hello('h', dev, { provisioning_secret: kiosk.provisioning_secret });
    expect(hello.result).toMatchObject({ device_key: 'bound' });
    // two users: one enrolled their right palm, the other their left
    for (const [id, identity, hand] of [
      ['e-right', 'side-a', 'right'],
      ['e-left', 'side-b', 'left'],
    ] as const) {
      const enrolled = await k.enroll(id, dev, [
        { template: await palm(identity, 1, hand), hand, liveness: 0.95 },
      ]);
      expect(enrolled.error, JSON.stringify(enrolled.error)).toBeUndefined();
    }
  }, 60_000);
  afterAll(async () => {
    k?.close();
    await t.close();
  });

  const attempt = async (id: string, template: string, hand?: 'left' | 'right') => {
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': vendor.api_key },
      payload: { auth_context: { type: 'login' } },
    });
    const authId = created.json().data.auth_id as string;
    const r = await k.identify(id, dev, { auth_id: authId, template, hand });
    expect(r.error, JSON.stringify(r.error)).toBeUndefined();
    return r.result as { success: boolean; reason?: string };
  };

  it('finds the enrolled palm of either side when the probe names no side', async () => {
    // later captures of both palms, side undecided: each is found among both hands' palms
    expect(await attempt('i-a', await palm('side-a', 2, 'unknown'))).toMatchObject({ success: true });
    expect(await attempt('i-b', await palm('side-b', 2, 'unknown'))).toMatchObject({ success: true });
    // a stranger of undecided side matches nobody
    expect(await attempt('i-x', await palm('side-x', 2, 'unknown'))).toMatchObject({
      success: false,
      reason: 'no_match',
    });
  }, 60_000);

  it('a probe of a known side is searched among that side only', async () => {
    expect(await attempt('k-a', await palm('side-a', 2, 'right'), 'right')).toMatchObject({ success: true });
    // the same capture labelled with the other side is not compared with the right palm
    expect(await attempt('k-a-left', await palm('side-a', 2, 'left'), 'left')).toMatchObject({
      success: false,
      reason: 'no_match',
    });
  }, 60_000);

  it('enrolment still needs a known side', async () => {
    const begun = await k.call('b', 'enroll.begin', {});
    const { enrolment_id, nonce } = begun.result as { enrolment_id: string; nonce: string };
    const template = await palm('side-c', 1, 'unknown');
    const sample = { template, quality: 0.9, liveness: 0.95 };
    const r = await k.call('e-none', 'enroll', {
      ...sample,
      attestation: dev.attest('enroll', enrolment_id, nonce, sample),
    });
    expect(r.error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'params.hand' } });
  }, 60_000);
});
