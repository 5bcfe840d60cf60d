import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { decisionBar, evidenceAt } from '@palmid/palm/decision';
import { compareTemplates } from '@palmid/palm/match';
import { decodeTemplate, encodeTemplate } from '@palmid/palm/template';
import { attestPalms, FrameClient, type TestDevice } from '@palmid/server/dev/testing';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  bindDevice,
  cli,
  createAuthContext,
  lastJson,
  type ServerProc,
  startServer,
  tempDir,
  VendorSocket,
} from './harness.ts';

/**
 * Identification decides for the whole gallery (CONTRACT §10), through a real server process, a
 * simulated kiosk on /ws/pvs and the vendor's socket: a stranger is refused; a capture that is
 * plausible but below the gallery-wide bar, and one that two enrolled users explain about equally,
 * make the server ask the kiosk for the other hand (the vendor sees `step_up_required`), and the
 * decision on both hands completes the context for the right person. The direct path fuses several
 * attested captures the same way.
 *
 * The plausible and ambiguous captures are real captures with code bits flipped until the
 * matcher's own distance lands where the test needs it (a poor capture, look-alike palms): real
 * synthetic palms are far apart (≈ 30 decades of evidence for a genuine pair).
 */
const TARGET_FPIR = 1e-4;
const ADMIN = 'server/src/cli/admin.ts';

async function capture(identity: string, hand: 'left' | 'right', n: number): Promise<Uint8Array> {
  const p = await processCapture(await renderPalm({ identity, hand, capture: n }));
  if (!p.ok) throw new Error(`synthetic capture of ${identity} refused: ${p.reason}`);
  return p.template;
}
const b64 = (t: Uint8Array) => Buffer.from(t).toString('base64');

/** A fixed pseudo-random order of the template's code bits (seeded: the test is deterministic). */
function bitOrder(seed: number): number[] {
  const n = 6 * 32 * 32;
  const order = Array.from({ length: n }, (_, i) => i);
  let s = seed >>> 0 || 1;
  for (let i = n - 1; i > 0; i--) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    const j = (s >>> 0) % (i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/** `t` with the code bits at `bits` flipped (header, mask and CRC rewritten by the encoder). */
function flip(t: Uint8Array, bits: number[]): Uint8Array {
  const d = decodeTemplate(t);
  const code = Uint32Array.from(d.code);
  for (const b of bits) code[b >>> 5] = code[b >>> 5]! ^ (1 << (b & 31));
  return encodeTemplate({ ...d, code });
}

const evidence = (a: Uint8Array, b: Uint8Array) => evidenceAt((1 - compareTemplates(a, b)) / 2);

describe('identification at gallery scale: refusal and step-up (real server process)', () => {
  const tmp = tempDir('palmid-stepup-');
  let server: ServerProc;
  let env: Record<string, string>;
  let vendor: { vendor_id: string; api_key: string };
  let host: TestDevice;
  let till: FrameClient;
  let tillDevice: TestDevice;
  let vws: VendorSocket;
  const users: Record<string, string> = {};
  const tpl: Record<string, Uint8Array> = {};
  type Kiosk = { pvs_id: string; device_token: string; provisioning_secret: string };

  const admin = async <T>(...args: string[]): Promise<T> => {
    const r = await cli(ADMIN, [...args, '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    return lastJson<T>(r.stdout);
  };
  /** Enrols a user with both hands through the vendor's capture host; returns the user's pseudonym. */
  const enrol = async (right: Uint8Array, left: Uint8Array) => {
    const res = await api(server.base, 'POST', '/api/v1/mpc/users/create', {
      key: vendor.api_key,
      body: {
        palms: attestPalms(host, [
          { hand: 'right' as const, template: b64(right) },
          { hand: 'left' as const, template: b64(left) },
        ]),
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data.pseudonym as string;
  };
  /** Palms enrolled per hand so far (every user enrols both). */
  let perHand = 0;
  const bar = () => decisionBar(perHand, TARGET_FPIR);

  beforeAll(async () => {
    env = {
      DATABASE_URL: `sqlite:${join(tmp.dir, 'palmid.db')}`,
      PALMID_MASTER_KEY: randomBytes(32).toString('hex'),
      PALMID_ENV: 'sandbox',
      PALMID_TARGET_FPIR: String(TARGET_FPIR),
    };
    const started = startServer({ ...env, PORT: '0' });
    for (const [name, identity, hand, n] of [
      ['aliceR', 'alice', 'right', 0],
      ['aliceR2', 'alice', 'right', 1],
      ['aliceL', 'alice', 'left', 0],
      ['aliceL2', 'alice', 'left', 1],
      ['bobL', 'bob', 'left', 0],
      ['carolR', 'carol', 'right', 0],
      ['carolR2', 'carol', 'right', 1],
      ['carolL', 'carol', 'left', 0],
      ['carolL2', 'carol', 'left', 1],
      ['strangerR', 'stranger', 'right', 0],
    ] as const)
      tpl[name] = await capture(identity, hand, n);
    server = await started;
    vendor = await admin('vendor', 'create', '--name', 'Shop');
    host = await bindDevice(
      server.base,
      await admin<Kiosk>('pvs', 'create', '--name', 'capture host', '--vendor', vendor.vendor_id),
    );
    const k = await admin<Kiosk>('pvs', 'create', '--name', 'till', '--vendor', vendor.vendor_id);
    tillDevice = await bindDevice(server.base, k);
    till = await FrameClient.open(`${server.base.replace(/^http/, 'ws')}/ws/pvs`, {
      authorization: `Bearer ${k.device_token}`,
    });
    const hello = await till.hello(randomUUID(), tillDevice, { capabilities: ['step_up'] });
    expect(hello.result, JSON.stringify(hello)).toMatchObject({ pvs_id: k.pvs_id });
    vws = await VendorSocket.open(server.base, vendor.api_key);

    users.alice = await enrol(tpl.aliceR!, tpl.aliceL!);
    users.carol = await enrol(tpl.carolR!, tpl.carolL!);
    perHand = 2;
  }, 120_000);

  afterAll(async () => {
    till?.ws.terminate();
    vws?.close();
    await server?.stop();
    tmp.remove();
  });

  /** carol's second capture, degraded (code bits flipped) until it carries at least 1 decade less than the bar asks */
  const poorCarol = () => {
    const order = bitOrder(7);
    let k = 0;
    let poor = tpl.carolR2!;
    while (evidence(poor, tpl.carolR!) >= bar() - 1 && k < order.length) {
      k += 16;
      poor = flip(tpl.carolR2!, order.slice(0, k));
    }
    return poor;
  };
  /** A context at the till, and the kiosk's identify with `template` (a new request id each time). */
  const context = () => createAuthContext(server.base, vendor.api_key, { type: 'login' });
  const identify = (authId: string, template: Uint8Array, hand: 'left' | 'right') =>
    till.identify(randomUUID(), tillDevice, { auth_id: authId, template: b64(template), hand });

  it('logs the target and the bar it sets at start-up', async () => {
    const line = await server.waitFor(/target FPIR ([\d.e-]+): bar ([\d.]+) decades at (\d+) palms/);
    expect(Number(line[1])).toBe(TARGET_FPIR);
    expect(Number(line[2])).toBeCloseTo(decisionBar(Math.max(1, Number(line[3])), TARGET_FPIR), 2);
  });

  it('a stranger is refused: no_match (after the other hand, when the first capture was plausible)', async () => {
    const authId = await context();
    const r = await identify(authId, tpl.strangerR!, 'right');
    // within the step-up window (3 decades under the bar) a stranger is asked for the other hand, as
    // ≈ target × 10^3 of strangers are by design; below it, refused at once
    const best = Math.max(evidence(tpl.strangerR!, tpl.aliceR!), evidence(tpl.strangerR!, tpl.carolR!));
    if (best >= bar() - 3) {
      expect(r.result, JSON.stringify(r)).toEqual({
        status: 'scanning',
        step_up: { reason: 'step_up_required', hand: 'left' },
      });
      // bob is not enrolled yet: the stranger's other hand
      const other = await identify(authId, tpl.bobL!, 'left');
      expect(other.result, JSON.stringify(other)).toEqual({
        status: 'failed',
        success: false,
        reason: 'no_match',
      });
    } else {
      expect(r.result, JSON.stringify(r)).toEqual({ status: 'failed', success: false, reason: 'no_match' });
    }
    expect((await vws.until(authId, ['failed'])).auth_result).toMatchObject({
      success: false,
      reason: 'no_match',
      user_id: null,
    });
  }, 30_000);

  it('a genuine capture well above the bar is identified at once', async () => {
    const authId = await context();
    const r = await identify(authId, tpl.aliceR2!, 'right');
    // the kiosk learns the outcome only; the vendor learns who
    expect(r.result, JSON.stringify(r)).toEqual({ status: 'completed', success: true });
    expect((await vws.until(authId, ['completed'])).auth_result).toMatchObject({ user_id: users.alice });
  }, 30_000);

  it('a plausible capture below the bar steps up to the other hand, then completes', async () => {
    // carol's second capture, degraded until it carries 1–2.5 decades less than the bar asks
    const poor = poorCarol();
    const e = evidence(poor, tpl.carolR!);
    expect(e).toBeLessThan(bar() - 1);
    expect(e).toBeGreaterThan(bar() - 2.5);

    // a webhook endpoint of the vendor hears of the step-up too (its outbox row, written with the change)
    const hook = await api(server.base, 'POST', '/api/v1/webhooks', {
      key: vendor.api_key,
      body: { url: 'https://hooks.example.com/palmid' },
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const authId = await context();
    const firstId = randomUUID();
    const first = await till.identify(firstId, tillDevice, {
      auth_id: authId,
      template: b64(poor),
      hand: 'right',
    });
    expect(first.result, JSON.stringify(first)).toEqual({
      status: 'scanning',
      step_up: { reason: 'step_up_required', hand: 'left' },
    });
    // a retry of the same request (after a reconnect) is answered the same, not refused as a replay
    const retried = await till.identify(firstId, tillDevice, {
      auth_id: authId,
      template: b64(poor),
      hand: 'right',
    });
    expect(retried.result).toEqual(first.result);
    // the vendor sees the step-up as an event of the still open context
    const stepUpEvent = () =>
      vws.updates.find((u) => u.auth_id === authId && (u as { reason?: string }).reason !== undefined);
    await expect.poll(stepUpEvent).toBeDefined();
    expect(stepUpEvent()).toEqual({ auth_id: authId, status: 'scanning', reason: 'step_up_required' });
    const outbox = new Database(join(tmp.dir, 'palmid.db'), { readonly: true });
    try {
      const rows = outbox
        .prepare('select type, payload from webhook_deliveries where context_id = ?')
        .all(authId) as { type: string; payload: string }[];
      expect(rows.map((r) => [r.type, JSON.parse(r.payload).data])).toContainEqual([
        'auth.updated',
        { auth_id: authId, status: 'scanning', reason: 'step_up_required' },
      ]);
    } finally {
      outbox.close();
    }
    const status = await api(server.base, 'GET', `/api/v1/auth/${authId}/status`, { key: vendor.api_key });
    expect(status.body.data.status).toBe('scanning');

    // the other hand: the server decides on both captures
    const second = await identify(authId, tpl.carolL2!, 'left');
    expect(second.result, JSON.stringify(second)).toEqual({ status: 'completed', success: true });
    expect((await vws.until(authId, ['completed'])).auth_result).toMatchObject({ user_id: users.carol });
  }, 30_000);

  it('the same poor capture without the other hand is refused (the kiosk shows a stranger’s left)', async () => {
    const poor = poorCarol();
    const authId = await context();
    const first = await identify(authId, poor, 'right');
    expect(first.result).toMatchObject({ step_up: { hand: 'left' } });
    const other = await identify(authId, tpl.bobL!, 'left');
    expect(other.result).toEqual({ status: 'failed', success: false, reason: 'no_match' });
    expect((await vws.until(authId, ['failed'])).auth_result).toMatchObject({ user_id: null });
  }, 30_000);

  it('two users about equally near the bar: ambiguous, the other hand decides', async () => {
    // a look-alike of alice's right palm (differing in the bits `look`), enrolled as another user
    // with bob's left hand: just far enough from alice's palm to pass the duplicate check
    const order = bitOrder(11);
    let m = 0;
    while (
      evidence(flip(tpl.aliceR!, order.slice(0, 2 * m)), tpl.aliceR!) >=
      decisionBar(1, TARGET_FPIR) - 0.3
    )
      m += 8;
    const lookAlike = flip(tpl.aliceR!, order.slice(0, 2 * m));
    users.twin = await enrol(lookAlike, tpl.bobL!);
    perHand = 3;
    // a capture half way between the two palms, with noise until both sit just below the bar
    const noise = bitOrder(23).filter((b) => !order.slice(0, 2 * m).includes(b));
    let g = 0;
    let probe = flip(tpl.aliceR!, order.slice(0, m));
    const near = () => Math.max(evidence(probe, tpl.aliceR!), evidence(probe, lookAlike));
    while (near() >= bar() - 0.3) {
      g += 8;
      probe = flip(tpl.aliceR!, [...order.slice(0, m), ...noise.slice(0, g)]);
    }
    const [ea, et] = [evidence(probe, tpl.aliceR!), evidence(probe, lookAlike)];
    expect(Math.abs(ea - et)).toBeLessThan(2); // the margin is not met
    expect(Math.min(ea, et)).toBeGreaterThan(bar() - 3); // both within the step-up window

    // without a kiosk that can step up (the direct path, one capture), this is a refusal, naming no one
    const direct = await api(server.base, 'POST', '/api/v1/auth', {
      key: vendor.api_key,
      body: { auth_context: { type: 'login' }, palm: host.direct({ template: b64(probe), hand: 'right' }) },
    });
    expect(direct.body.data.auth_result, JSON.stringify(direct.body)).toMatchObject({
      success: false,
      user_id: null,
      reason: 'no_match',
      detail: 'ambiguous_match',
    });

    const authId = await context();
    const first = await identify(authId, probe, 'right');
    expect(first.result, JSON.stringify(first)).toEqual({
      status: 'scanning',
      step_up: { reason: 'step_up_required', hand: 'left' },
    });
    const second = await identify(authId, tpl.aliceL2!, 'left');
    expect(second.result, JSON.stringify(second)).toEqual({ status: 'completed', success: true });
    expect((await vws.until(authId, ['completed'])).auth_result).toMatchObject({ user_id: users.alice });

    // the direct path: both hands in one request, attested together
    const subject = randomUUID();
    const sign = (template: Uint8Array, hand: 'left' | 'right') => {
      const s = { template: b64(template), hand, quality: 0.9, liveness: 0.9 };
      return { ...s, attestation: host.attest('direct', subject, undefined, s) };
    };
    const both = await api(server.base, 'POST', '/api/v1/auth', {
      key: vendor.api_key,
      body: {
        auth_context: { type: 'login' },
        captures: [sign(probe, 'right'), sign(tpl.aliceL2!, 'left')],
      },
    });
    expect(both.status, JSON.stringify(both.body)).toBe(200);
    expect(both.body.data.auth_result).toMatchObject({ success: true, user_id: users.alice });
    // palm and captures together, or neither: 400
    const neither = await api(server.base, 'POST', '/api/v1/auth', {
      key: vendor.api_key,
      body: { auth_context: { type: 'login' } },
    });
    expect(neither.status).toBe(400);
  }, 60_000);
});
