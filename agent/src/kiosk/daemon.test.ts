import { EventEmitter } from 'node:events';
import {
  attestCapture,
  type CaptureAttestation,
  generateDeviceKey,
  verifyCapture,
} from '@palmid/contracts/crypto/capture';
import { FirmwareSimulator, type ImageSource, synthPalmSource } from '@palmid/firmware-sim';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { decodeTemplate } from '@palmid/palm/template';
import { afterEach, describe, expect, it } from 'vitest';
import { sideless } from '../../../test/support/sideless-hand.ts';
import { ScannerError } from '../driver/errors.ts';
import { ScannerDriver } from '../driver/scanner-driver.ts';
import { MemoryTransport } from '../transport/memory.ts';
import { KioskDaemon, type KioskLink, type Outcome, type ProcessFrame } from './daemon.ts';

class FakeLink extends EventEmitter implements KioskLink {
  readonly calls: { method: string; params: Record<string, unknown>; id: string | undefined }[] = [];
  async call<T>(method: string, params: unknown, opts: { id?: string } = {}): Promise<T> {
    const p = params as Record<string, unknown>;
    this.calls.push({ method, params: p, id: opts.id });
    const live = (p.liveness as number) >= 0.5;
    return {
      status: live ? 'completed' : 'failed',
      ...(live ? { success: true } : { success: false, reason: 'liveness_failed' }),
    } as T;
  }
  request(authId: string, expiresInMs = 20_000) {
    this.emit('notification', 'scan.request', {
      auth_id: authId,
      type: 'payment',
      amount: 100,
      currency: 'EUR',
      display: 'Pay 1.00 EUR',
      expires_at: new Date(Date.now() + expiresInMs).toISOString(),
      nonce: `nonce-${authId.slice(0, 8)}`,
    });
  }
}

const DEVICE = generateDeviceKey();
const DEVICE_ID = '99999999-9999-4999-8999-999999999999';
let counter = 0;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

function kiosk(
  presented: { identity: string; hand: 'left' | 'right'; attack?: 'print' | 'screen' },
  setup: { source?: ImageSource; process?: ProcessFrame } = {},
) {
  const device = new FirmwareSimulator({
    source: setup.source ?? synthPalmSource,
    captureMs: 10,
    autoPresent: presented,
    autoPresentDelayMs: 5,
  });
  const driver = new ScannerDriver(new MemoryTransport(() => device.connectMemory()), { pollMs: 10 });
  const link = new FakeLink();
  const lines: string[] = [];
  const daemon = new KioskDaemon(driver, setup.process ?? processCapture, link, {
    repromptMs: 5,
    display: (l) => lines.push(l),
    attest: (authId, nonce, sample) =>
      attestCapture({
        privateKey: DEVICE.privateKey,
        purpose: 'identify',
        deviceId: DEVICE_ID,
        subject: authId,
        nonce,
        ...sample,
        capturedAt: Date.now(),
        counter: ++counter,
      }),
  });
  cleanups.push(async () => {
    await driver.close();
    device.stop();
  });
  return { device, driver, link, daemon, lines };
}

const outcome = (d: KioskDaemon) => new Promise<Outcome>((r) => d.once('outcome', r));

/** A server that asks for the other hand after the first capture (a step-up), then accepts. */
class StepUpLink extends FakeLink {
  override async call<T>(method: string, params: unknown, opts: { id?: string } = {}): Promise<T> {
    const p = params as Record<string, unknown>;
    this.calls.push({ method, params: p, id: opts.id });
    if (this.calls.filter((c) => c.method === 'identify').length === 1)
      return { status: 'scanning', step_up: { reason: 'step_up_required', hand: 'left' } } as T;
    return { status: 'completed', auth_result: { success: true } } as T;
  }
}

describe('KioskDaemon', () => {
  it('on a step-up asks for the other hand, captures it (the simulator’s person answers the amber LED) and identifies again', async () => {
    const k = kiosk({ identity: 'alice', hand: 'right' });
    const link = new StepUpLink();
    const daemon = new KioskDaemon(k.driver, processCapture, link, {
      repromptMs: 5,
      display: (l) => k.lines.push(l),
    });
    await k.driver.connect();
    const auth = '12121212-1212-4121-8121-121212121212';
    const stepUps: unknown[] = [];
    daemon.on('step-up', (e) => stepUps.push(e));
    const simulated: unknown[] = [];
    k.device.on('step-up', (p) => simulated.push(p));
    const done = outcome(daemon);
    link.request(auth);
    const o = await done;
    expect(o, k.lines.join('\n')).toMatchObject({ auth_id: auth, status: 'completed' });
    expect(stepUps).toEqual([{ auth_id: auth, hand: 'left' }]);
    expect(k.lines).toContain('Please also hold your left palm over the scanner.');
    const calls = link.calls.filter((c) => c.method === 'identify');
    expect(calls.map((c) => c.id)).toEqual([`identify:${auth}`, `identify:${auth}:step-up`]);
    expect(calls.map((c) => c.params.hand)).toEqual(['right', 'left']);
    // the second capture is the other hand indeed (its template says so), and a capture of its own
    const second = decodeTemplate(new Uint8Array(Buffer.from(calls[1]!.params.template as string, 'base64')));
    expect(second.hand).toBe('left');
    expect(calls[1]!.params.template).not.toBe(calls[0]!.params.template);
    expect(simulated).toEqual([{ identity: 'alice', hand: 'left' }]);
    // the outcome LED ends the prompt: the person walks away, the next one presents the first hand again
    const next = outcome(daemon);
    link.request('13131313-1313-4131-8131-131313131313');
    expect((await next).status).toBe('completed');
    expect(link.calls.filter((c) => c.method === 'identify').at(-1)!.params.hand).toBe('right');
  });

  it('captures a live palm and sends identify with an idempotency key derived from the auth id', async () => {
    const k = kiosk({ identity: 'alice', hand: 'right' });
    await k.driver.connect();
    const auth = '11111111-1111-4111-8111-111111111111';
    const done = outcome(k.daemon);
    k.link.request(auth);
    const o = await done;
    expect(o, k.lines.join('\n')).toMatchObject({ auth_id: auth, status: 'completed' });
    const call = k.link.calls.find((c) => c.method === 'identify')!;
    expect(call.id).toBe(`identify:${auth}`);
    expect(call.params).toMatchObject({ auth_id: auth, hand: 'right' });
    expect(typeof call.params.template).toBe('string');
    expect(call.params.liveness as number).toBeGreaterThanOrEqual(0.5);
    expect(k.lines[0]).toBe('Pay 1.00 EUR');
    // the capture is signed as sent: the server's verifier accepts it with the device's public key
    const p = call.params as { template: string; hand: 'right'; quality: number; liveness: number };
    const check = verifyCapture({
      attestation: call.params.attestation as CaptureAttestation,
      sample: { ...p, template: new Uint8Array(Buffer.from(p.template, 'base64')) },
      purpose: 'identify',
      publicKey: DEVICE.publicKey,
      now: Date.now(),
    });
    expect(check.ok).toBe(true);
    expect(call.params.attestation).toMatchObject({ subject: auth, nonce: 'nonce-11111111' });
    // where the time went: two live captures (each with its transfer) and their pipeline runs; the second
    // capture was started before the first frame went through the pipeline (the sensor exposes it
    // meanwhile)
    const steps = o.timings!;
    expect(steps.map((t) => t.step)).toEqual([
      'queued',
      'capture',
      'transfer',
      'pipeline',
      'capture',
      'transfer',
      'pipeline',
      'attest',
      'identify',
    ]);
    const [c1, c2] = steps.filter((t) => t.step === 'capture');
    const [x1] = steps.filter((t) => t.step === 'transfer');
    const [p1, p2] = steps.filter((t) => t.step === 'pipeline');
    const [queued, attest, identify] = ['queued', 'attest', 'identify'].map(
      (name) => steps.find((t) => t.step === name)!,
    );
    const end = (t: { at: number; ms: number }) => t.at + t.ms;
    // the serial steps follow one another without overlap: the wait ends before the first capture starts,
    // the second frame's pipeline before signing, and identify starts the instant signing ends
    expect(end(queued!)).toBeLessThanOrEqual(c1!.at + 0.001);
    expect(end(p1!)).toBeLessThanOrEqual(p2!.at + 0.001);
    expect(end(p2!)).toBeLessThanOrEqual(attest!.at + 0.001);
    expect(identify!.at).toBeCloseTo(end(attest!), 6);
    expect(x1!.ms).toBeLessThanOrEqual(c1!.ms);
    expect(x1!.at + x1!.ms).toBeCloseTo(c1!.at + c1!.ms, 0); // the transfer ends the capture
    expect(c2!.at).toBeLessThanOrEqual(p1!.at); // started ahead of the first frame's pipeline
    expect(p2!.at).toBeGreaterThanOrEqual(c2!.at + c2!.ms - 0.001);
    expect(k.device.captures().filter((c) => c.outcome === 'ready')).toHaveLength(2);
  }, 30_000);

  it('sends a capture of undecided hand side without a hand, signed as "not given"', async () => {
    // a camera profile (grey-dark) and a hand that shows no thumb, thumb web or finger-width cue
    const frame = sideless('grey-dark');
    const k = kiosk(
      { identity: 'carol', hand: 'right' },
      {
        source: { name: 'sideless', render: () => frame },
        process: (f) => processCapture(f, { sensor: 'grey-dark' }),
      },
    );
    await k.driver.connect();
    const auth = '12121212-1212-4121-8121-121212121212';
    const done = outcome(k.daemon);
    k.link.request(auth);
    expect(await done, k.lines.join('\n')).toMatchObject({ auth_id: auth, status: 'completed' });
    const call = k.link.calls.find((c) => c.method === 'identify')!;
    expect('hand' in call.params).toBe(false);
    const p = call.params as { template: string; quality: number; liveness: number };
    const template = new Uint8Array(Buffer.from(p.template, 'base64'));
    expect(decodeTemplate(template).hand).toBe('unknown');
    const verify = (hand: 'left' | 'right' | undefined) =>
      verifyCapture({
        attestation: call.params.attestation as CaptureAttestation,
        sample: { ...p, template, hand },
        purpose: 'identify',
        publicKey: DEVICE.publicKey,
        now: Date.now(),
      }).ok;
    expect(verify(undefined)).toBe(true);
    // a side added on the way does not verify
    expect(verify('right')).toBe(false);
  }, 30_000);

  it('reports a printed photo as a presentation attack without sending a template', async () => {
    const k = kiosk({ identity: 'mallory', hand: 'left', attack: 'print' });
    await k.driver.connect();
    const done = outcome(k.daemon);
    k.link.request('22222222-2222-4222-8222-222222222222');
    const o = await done;
    expect(o).toMatchObject({ status: 'failed', reason: 'liveness_failed' });
    const call = k.link.calls.find((c) => c.method === 'identify')!;
    expect(call.params.template).toBeUndefined();
    expect(call.params.liveness as number).toBeLessThan(0.5);
    // the attack report is attested too (over the empty template)
    expect(
      verifyCapture({
        attestation: call.params.attestation as CaptureAttestation,
        sample: { template: undefined, hand: 'right', quality: 0, liveness: call.params.liveness as number },
        purpose: 'identify',
        publicKey: DEVICE.publicKey,
        now: Date.now(),
      }).ok,
    ).toBe(true);
  }, 30_000);

  it('stops on scan.cancel and drops queued requests that are cancelled', async () => {
    const k = kiosk({ identity: 'bob', hand: 'right' });
    k.device.setAutoPresent(false); // nobody presents: the capture waits
    await k.driver.connect();
    const done = outcome(k.daemon);
    k.link.request('33333333-3333-4333-8333-333333333333');
    k.link.request('44444444-4444-4444-8444-444444444444');
    await new Promise((r) => setTimeout(r, 100));
    k.link.emit('notification', 'scan.cancel', { auth_id: '44444444-4444-4444-8444-444444444444' });
    k.link.emit('notification', 'scan.cancel', { auth_id: '33333333-3333-4333-8333-333333333333' });
    expect(await done).toMatchObject({ status: 'cancelled' });
    await new Promise((r) => setTimeout(r, 100));
    expect(k.daemon.busy).toBe(false);
    expect(k.link.calls).toHaveLength(0);
  }, 30_000);

  it('ignores malformed notifications', async () => {
    const k = kiosk({ identity: 'bob', hand: 'right' });
    k.link.emit('notification', 'scan.request', { auth_id: 'nope' });
    k.link.emit('notification', 'scan.cancel', 42);
    expect(k.daemon.busy).toBe(false);
  });
});

describe('KioskDaemon when the server link fails', () => {
  it('reports the context as a link error instead of crashing (e.g. agent stopping mid-call)', async () => {
    const k = kiosk({ identity: 'alice', hand: 'right' });
    await k.driver.connect();
    k.link.call = async () => {
      throw Object.assign(new Error('uplink stopped'), { code: 'STOPPED' });
    };
    const done = outcome(k.daemon);
    k.link.request('55555555-5555-4555-8555-555555555555');
    expect(await done).toMatchObject({ status: 'link_error', reason: 'STOPPED' });
    expect(k.daemon.busy).toBe(false);
  }, 30_000);
});

describe('KioskDaemon multi-frame presentation-attack detection', () => {
  const frame = { captureId: 1, width: 4, height: 4, data: new Uint8Array(16), durationMs: 1 };
  const scanner = { capture: async () => frame };
  const ok = (liveness: number, quality: number) =>
    ({
      ok: true,
      template: new Uint8Array([quality]),
      quality,
      liveness,
      hand: 'right',
      measures: {},
    }) as never;
  const attack = { ok: false, reason: 'liveness_failed', message: 'Presentation attack suspected' } as never;

  it('an attack that passes the detector once is still caught on the next frame', async () => {
    const script = [ok(51, 80), attack];
    const link = new FakeLink();
    const d = new KioskDaemon(scanner, async () => script.shift() ?? attack, link, { repromptMs: 1 });
    const done = outcome(d);
    link.request('66666666-6666-4666-8666-666666666666');
    expect(await done).toMatchObject({ status: 'failed', reason: 'liveness_failed' });
    const call = link.calls.find((c) => c.method === 'identify')!;
    expect(call.params.template).toBeUndefined();
  });

  it('one false attack verdict on a live hand is forgiven; a second one ends the context', async () => {
    const forgiven = [attack, ok(80, 70), ok(85, 75)];
    const link = new FakeLink();
    const d = new KioskDaemon(scanner, async () => forgiven.shift()!, link, { repromptMs: 1 });
    const done = outcome(d);
    link.request('88888888-8888-4888-8888-888888888888');
    expect(await done).toMatchObject({ status: 'completed', attempts: 3 });
    expect(link.calls.find((c) => c.method === 'identify')!.params.template).toBeDefined();

    const twice = [attack, ok(80, 70), attack];
    const link2 = new FakeLink();
    const d2 = new KioskDaemon(scanner, async () => twice.shift() ?? attack, link2, { repromptMs: 1 });
    const done2 = outcome(d2);
    link2.request('99999999-9999-4999-8999-999999999999');
    expect(await done2).toMatchObject({ status: 'failed', reason: 'liveness_failed', attempts: 3 });
    expect(link2.calls.find((c) => c.method === 'identify')!.params.template).toBeUndefined();

    // a stricter kiosk can still fail at the first verdict
    const strict = [attack];
    const link3 = new FakeLink();
    const d3 = new KioskDaemon(scanner, async () => strict.shift() ?? attack, link3, {
      repromptMs: 1,
      livenessStrikes: 1,
    });
    const done3 = outcome(d3);
    link3.request('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa');
    expect(await done3).toMatchObject({ status: 'failed', reason: 'liveness_failed', attempts: 1 });
  });

  it('a live hand is identified once, with the best capture and the weakest liveness verdict', async () => {
    const script = [ok(90, 60), ok(70, 95)];
    const link = new FakeLink();
    const d = new KioskDaemon(scanner, async () => script.shift()!, link, { repromptMs: 1 });
    const done = outcome(d);
    link.request('77777777-7777-4777-8777-777777777777');
    expect(await done).toMatchObject({ status: 'completed', attempts: 2 });
    const calls = link.calls.filter((c) => c.method === 'identify');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.params).toMatchObject({
      liveness: 0.7,
      quality: 0.95,
      template: Buffer.from([95]).toString('base64'),
    });
  });
});

describe('KioskDaemon starts the next capture while a frame is in the pipeline', () => {
  const frame = { captureId: 1, width: 4, height: 4, data: new Uint8Array(16), durationMs: 1 };
  const live = (quality: number) =>
    ({
      ok: true,
      template: new Uint8Array([quality]),
      quality,
      liveness: 90,
      hand: 'right',
      measures: {},
    }) as never;
  const blurred = { ok: false, reason: 'quality', message: 'Image too blurry' } as never;

  /** A scanner whose captures take a few ms and end early, with ABORTED, when their signal fires. */
  function scanner() {
    const calls: { aborted: boolean }[] = [];
    let running = 0;
    let most = 0;
    const s = {
      calls,
      get most() {
        return most;
      },
      capture: ({ signal, onStart }: { signal?: AbortSignal; onStart?: () => void }) =>
        new Promise<typeof frame>((resolve, reject) => {
          onStart?.();
          const call = { aborted: false };
          calls.push(call);
          most = Math.max(most, ++running);
          const timer = setTimeout(() => {
            running -= 1;
            resolve(frame);
          }, 5);
          signal?.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              running -= 1;
              call.aborted = true;
              reject(new ScannerError('ABORTED', 'capture aborted'));
            },
            { once: true },
          );
        }),
    };
    return s;
  }

  it('a live first frame: the capture started ahead is the second frame', async () => {
    const sc = scanner();
    const link = new FakeLink();
    const script = [live(60), live(70)];
    const d = new KioskDaemon(sc, async () => script.shift()!, link, { repromptMs: 1 });
    const done = outcome(d);
    link.request('bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb');
    expect(await done).toMatchObject({ status: 'completed', attempts: 2 });
    expect(sc.calls).toEqual([{ aborted: false }, { aborted: false }]);
    expect(sc.most).toBe(1);
  });

  it('a refused frame: the capture started ahead is aborted, not used, and the person asked again', async () => {
    const sc = scanner();
    const link = new FakeLink();
    const script = [blurred, live(60), live(70)];
    const lines: string[] = [];
    const d = new KioskDaemon(sc, async () => script.shift()!, link, {
      repromptMs: 1,
      display: (l) => lines.push(l),
    });
    const done = outcome(d);
    link.request('cccccccc-cccc-4ccc-8ccc-cccccccccccc');
    // three frames used: the refused one and two live ones; the one taken during the refused frame's
    // pipeline was thrown away
    expect(await done).toMatchObject({ status: 'completed', attempts: 3 });
    expect(sc.calls.map((c) => c.aborted)).toEqual([false, true, false, false]);
    expect(sc.most).toBe(1);
    expect(lines.some((l) => l.startsWith('Image too blurry'))).toBe(true);
  });

  it('nothing is started ahead when one live frame is enough', async () => {
    const sc = scanner();
    const link = new FakeLink();
    const d = new KioskDaemon(sc, async () => live(60), link, { repromptMs: 1, liveFrames: 1 });
    const done = outcome(d);
    link.request('dddddddd-dddd-4ddd-8ddd-dddddddddddd');
    expect(await done).toMatchObject({ status: 'completed', attempts: 1 });
    expect(sc.calls).toHaveLength(1);
  });

  it('scan.cancel during the pipeline aborts the capture started ahead before the kiosk moves on', async () => {
    const sc = scanner();
    const link = new FakeLink();
    const auth = 'eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee';
    const d = new KioskDaemon(
      sc,
      async () => {
        link.emit('notification', 'scan.cancel', { auth_id: auth });
        return live(60);
      },
      link,
      { repromptMs: 1 },
    );
    const done = outcome(d);
    link.request(auth);
    expect(await done).toMatchObject({ status: 'cancelled', attempts: 1 });
    expect(sc.calls.map((c) => c.aborted)).toEqual([false, true]);
    expect(d.busy).toBe(false);
    expect(link.calls).toHaveLength(0);
  });
});
