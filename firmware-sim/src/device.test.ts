import { type ChannelEvent, WireChannel } from '@palmid/contracts/wire/channel';
import { encodeFrame } from '@palmid/contracts/wire/frame';
import type { ByteLink } from '@palmid/contracts/wire/link';
import { CAPTURE_STATE, DEVICE_ERROR, LED } from '@palmid/contracts/wire/messages';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { FirmwareSimulator, type SimulatorOptions } from './device.ts';
import { type GrayFrame, type ImageSource, synthPalmSource, testPatternSource } from './image-source.ts';
import { renderPalm } from './synth/index.ts';

const sims: FirmwareSimulator[] = [];
afterEach(() => {
  for (const s of sims.splice(0)) s.stop();
});

/** A raw host on the memory link: direct access to every command and answer. */
function host(options: SimulatorOptions = {}) {
  const sim = new FirmwareSimulator({ source: testPatternSource, captureMs: 20, ...options });
  sims.push(sim);
  const link: ByteLink = sim.connectMemory();
  const events: ChannelEvent[] = [];
  const channel = new WireChannel((b) => link.write(b), {
    timeoutMs: 200,
    retries: 0,
    onEvent: (e) => events.push(e),
  });
  link.onData((b) => channel.receive(b));
  return { sim, link, channel, events };
}

const until = async (cond: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
};

async function captureOnce(ch: WireChannel, token = 1) {
  const { captureId } = await ch.request({ kind: 'START_CAPTURE', token }, 'CAPTURE_STARTED');
  let status = await ch.request({ kind: 'CAPTURE_STATUS' }, 'STATUS');
  while (status.state !== CAPTURE_STATE.READY) {
    if (status.state === CAPTURE_STATE.FAILED) throw new Error('capture failed');
    await new Promise((r) => setTimeout(r, 5));
    status = await ch.request({ kind: 'CAPTURE_STATUS' }, 'STATUS');
  }
  const data = new Uint8Array(status.size);
  for (let off = 0; off < status.size; off += 1024) {
    const chunk = await ch.request(
      { kind: 'READ_IMAGE', captureId, offset: off, length: 1024 },
      'IMAGE_CHUNK',
    );
    data.set(chunk.data, off);
  }
  return { captureId, status, data };
}

describe('FirmwareSimulator state machine', () => {
  it('idle → waiting for palm → capturing → ready, with palm events', async () => {
    const { sim, channel, events } = host();
    const states: string[] = [];
    sim.on('state', (s: string) => states.push(s));
    await channel.request({ kind: 'START_CAPTURE', token: 9 }, 'CAPTURE_STARTED');
    expect(sim.snapshot().state).toBe('WAITING_PALM');
    sim.present({ identity: 'alice', hand: 'left' });
    await until(() => sim.snapshot().state === 'READY');
    expect(states).toEqual(['WAITING_PALM', 'CAPTURING', 'READY']);
    await until(() => events.length >= 2);
    expect(events.map((e) => e.kind)).toEqual(['EVT_PALM_PRESENT', 'EVT_IMAGE_READY']);
  });

  it('a repeated START_CAPTURE token does not restart the capture; a new token does', async () => {
    const { sim, channel } = host({ autoPresent: { identity: 'a', hand: 'right' }, autoPresentDelayMs: 1 });
    const first = await channel.request({ kind: 'START_CAPTURE', token: 5 }, 'CAPTURE_STARTED');
    const again = await channel.request({ kind: 'START_CAPTURE', token: 5 }, 'CAPTURE_STARTED');
    expect(again.captureId).toBe(first.captureId);
    const fresh = await channel.request({ kind: 'START_CAPTURE', token: 6 }, 'CAPTURE_STARTED');
    expect(fresh.captureId).toBe(first.captureId + 1);
    expect(sim.snapshot().captureId).toBe(fresh.captureId);
  });

  it('refuses reads without an image, out of range, or above maxChunk', async () => {
    const { channel } = host({ autoPresent: { identity: 'a', hand: 'right' }, autoPresentDelayMs: 1 });
    await expect(
      channel.request({ kind: 'READ_IMAGE', captureId: 1, offset: 0, length: 10 }, 'IMAGE_CHUNK'),
    ).rejects.toMatchObject({ code: 'NAK', deviceCode: DEVICE_ERROR.NO_IMAGE });
    const { captureId } = await captureOnce(channel);
    for (const [offset, length] of [
      [76_800 - 10, 20],
      [0, 0],
      [0, 1025],
    ] as const) {
      await expect(
        channel.request({ kind: 'READ_IMAGE', captureId, offset, length }, 'IMAGE_CHUNK'),
      ).rejects.toMatchObject({ code: 'NAK', deviceCode: DEVICE_ERROR.OUT_OF_RANGE });
    }
  });

  it('answers an unknown command with NAK UNKNOWN_COMMAND and a malformed one with BAD_REQUEST', async () => {
    const { link } = host();
    const got: number[] = [];
    link.onData((b) => got.push(...b));
    link.write(encodeFrame({ type: 0x3e, seq: 4, payload: new Uint8Array(0) }));
    link.write(encodeFrame({ type: 0x02, seq: 5, payload: Uint8Array.of(1) })); // START_CAPTURE needs 2 bytes
    await until(() => got.length > 0 && got.filter((b) => b === 0x7f).length >= 2);
    const text = Buffer.from(got).toString('hex');
    // NAK (0x7f) for type 0x3e with code 2, then for type 0x02 with code 1.
    expect(text).toContain('a57f04');
    expect(text).toMatch(/a57f05.{6}0201/);
  });

  it('capture counter varies each frame of the same hand', async () => {
    const { channel } = host({ autoPresent: { identity: 'a', hand: 'right' }, autoPresentDelayMs: 1 });
    const one = await captureOnce(channel, 1);
    const two = await captureOnce(channel, 2);
    const exp1 = await patternFrame('a', 'right', 1);
    expect(Buffer.from(two.data).equals(Buffer.from(exp1))).toBe(true);
    expect(Buffer.from(one.data).equals(Buffer.from(two.data))).toBe(false);
    expect(one.status.imageCrc).not.toBe(two.status.imageCrc);
  });

  it('exposure, gain and NIR LEDs change the frame; defaults leave it unchanged', async () => {
    const { channel } = host({ autoPresent: { identity: 'a', hand: 'right' }, autoPresentDelayMs: 1 });
    const base = await captureOnce(channel, 1);
    await channel.request({ kind: 'SET_LEDS', mask: LED.STATUS_GREEN, intensity: 255 }, 'LEDS_SET');
    const dark = await captureOnce(channel, 2);
    const mean = (d: Uint8Array) => d.reduce((a, b) => a + b, 0) / d.length;
    expect(mean(dark.data)).toBeLessThan(mean(base.data) * 0.1);
    await expect(
      channel.request({ kind: 'SET_EXPOSURE', exposureUs: 10, gain: 1 }, 'EXPOSURE_SET'),
    ).rejects.toMatchObject({ deviceCode: DEVICE_ERROR.OUT_OF_RANGE });
  });

  it('RESET answers, drops the image, clears a stuck sensor and announces the boot', async () => {
    // The sensor's clock is fake (its timers and performance.now, so a loaded machine cannot make it fall
    // behind); the link still delivers on real turns.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const { sim, channel, events } = host({
      autoPresent: { identity: 'a', hand: 'right' },
      autoPresentDelayMs: 1,
    });
    sim.injectFault({ kind: 'stuck-sensor' });
    sim.injectFault({ kind: 'slow', delayMs: 0 });
    await channel.request({ kind: 'START_CAPTURE', token: 1 }, 'CAPTURE_STARTED');
    await vi.advanceTimersByTimeAsync(100); // five times the 20 ms exposure: a working sensor is long done
    const stuck = await channel.request({ kind: 'CAPTURE_STATUS' }, 'STATUS');
    expect(stuck).toMatchObject({ state: CAPTURE_STATE.CAPTURING, progress: 40 });
    await channel.request({ kind: 'RESET' }, 'RESET_DONE');
    expect(sim.snapshot().faults.map((f) => f.kind)).toEqual(['slow']);
    expect(events.some((e) => e.kind === 'EVT_BOOT')).toBe(false);
    await vi.advanceTimersByTimeAsync(20); // the boot announcement comes 20 ms after the reset
    for (let i = 0; i < 20 && !events.some((e) => e.kind === 'EVT_BOOT'); i++)
      await new Promise((r) => setImmediate(r));
    expect(events.map((e) => e.kind)).toContain('EVT_BOOT');
    expect((await channel.request({ kind: 'CAPTURE_STATUS' }, 'STATUS')).state).toBe(CAPTURE_STATE.IDLE);
  });

  it('unplug closes every link and refuses new ones until replugged', async () => {
    const { sim, link } = host();
    const closed = new Promise((r) => link.onClose(r));
    sim.unplug();
    await closed;
    expect(() => sim.connectMemory()).toThrow(/unplugged/);
    sim.replug();
    expect(sim.connectMemory().closed).toBe(false);
  });

  it('a silent device reads commands but never answers', async () => {
    const { sim, channel } = host();
    sim.injectFault({ kind: 'silent' });
    await expect(channel.request({ kind: 'GET_INFO' }, 'INFO', { timeoutMs: 50 })).rejects.toMatchObject({
      code: 'TIMEOUT',
    });
  });

  it('rejects malformed faults and presentations', () => {
    const sim = new FirmwareSimulator({ source: testPatternSource });
    sims.push(sim);
    expect(() => sim.injectFault({ kind: 'crc-noise', probability: 2 })).toThrow();
    expect(() => sim.injectFault({ kind: 'meteor' } as never)).toThrow();
    expect(() => sim.present({ identity: '', hand: 'right' })).toThrow();
  });
});

/** A frame source whose renders finish when the test says so, and that logs what it was asked for. */
function heldSource() {
  const asked: { key: string; capture: number; release(): void }[] = [];
  const source: ImageSource = {
    name: 'held',
    render(r) {
      return new Promise<GrayFrame>((resolve) => {
        asked.push({
          key: `${r.identity}|${r.hand}|${r.attack ?? ''}`,
          capture: r.capture,
          release: () => void testPatternSource.render(r).then(resolve),
        });
      });
    },
  };
  return { source, asked };
}

/** The test pattern's 320 × 240 frame of a hand's `capture`-th capture: what the device must send. */
async function patternFrame(identity: string, hand: 'left' | 'right', capture: number): Promise<Uint8Array> {
  return (await testPatternSource.render({ identity, hand, capture, width: 320, height: 240 })).data;
}

/** Presents hand "a" and takes capture 1, releasing its held render: the device is READY after. */
async function firstHeldCapture(
  sim: FirmwareSimulator,
  channel: WireChannel,
  asked: ReturnType<typeof heldSource>['asked'],
): Promise<void> {
  sim.present({ identity: 'a', hand: 'right' });
  const first = channel.request({ kind: 'START_CAPTURE', token: 1 }, 'CAPTURE_STARTED');
  await until(() => asked.length === 1);
  asked[0]!.release();
  await first;
  await until(() => sim.snapshot().state === 'READY');
}

const tick = () => new Promise((r) => setImmediate(r));

describe('FirmwareSimulator frames and their timing', () => {
  it('a frame rendered after its exposure ended is read out the moment it is there', async () => {
    const { source, asked } = heldSource();
    const { sim, channel } = host({ source, captureMs: 10, renderAhead: false });
    sim.present({ identity: 'a', hand: 'right' });
    await channel.request({ kind: 'START_CAPTURE', token: 1 }, 'CAPTURE_STARTED');
    // the exposure is over, the render is not: a slow sensor that keeps moving
    await until(() => sim.snapshot().progress > 80); // 81 %: the exposure ended, the read-out waits
    expect(sim.snapshot().state).toBe('CAPTURING');
    expect(asked).toHaveLength(1);
    asked[0]!.release();
    await tick(); // the render's promise chain, no timer: not a later progress step
    expect(sim.snapshot().state).toBe('READY');
    const [record] = sim.captures();
    expect(record).toMatchObject({ captureId: 1, exposureMs: 10, outcome: 'ready' });
    expect(record!.renderMs).toBeGreaterThanOrEqual(10);
    expect(record!.doneMs).toBeGreaterThanOrEqual(record!.renderMs!);
  });

  it("renders the next capture's frame ahead while the same hand stays, and uses it", async () => {
    const { source, asked } = heldSource();
    const { sim, channel } = host({ source, captureMs: 5 });
    await firstHeldCapture(sim, channel, asked);
    // capture 1's frame was asked for before its capture started
    await until(() => asked.length === 2);
    expect(asked[1]).toMatchObject({ key: 'a|right|', capture: 1 });
    asked[1]!.release();
    await tick();
    const second = await captureOnce(channel, 2);
    const want = await patternFrame('a', 'right', 1);
    expect(Buffer.from(second.data).equals(Buffer.from(want))).toBe(true);
    // the second capture rendered nothing new: it only asked ahead for capture 2
    await until(() => asked.length === 3);
    expect(asked.map((a) => a.capture)).toEqual([0, 1, 2]);
    expect(sim.captures().map((c) => c.outcome)).toEqual(['ready', 'ready']);
  });

  it('a frame rendered ahead for one hand is not used for another', async () => {
    const { sim, channel } = host({ source: testPatternSource, captureMs: 5 });
    sim.present({ identity: 'a', hand: 'right' });
    await captureOnce(channel, 1);
    sim.present({ identity: 'b', hand: 'left' });
    const other = await captureOnce(channel, 2);
    const want = await patternFrame('b', 'left', 0);
    expect(Buffer.from(other.data).equals(Buffer.from(want))).toBe(true);
  });

  it('without renderAhead each frame is rendered when its capture starts', async () => {
    const { source, asked } = heldSource();
    const { sim, channel } = host({ source, captureMs: 5, renderAhead: false });
    await firstHeldCapture(sim, channel, asked);
    await new Promise((r) => setTimeout(r, 20));
    expect(asked).toHaveLength(1);
  });
});

describe('synthetic palm frames', () => {
  it('the frame is the palm renderer output for (identity, hand, capture), attacks included', async () => {
    const { sim, channel } = host({ source: synthPalmSource, captureMs: 5 });
    sim.present({ identity: 'carol', hand: 'left' });
    const live = await captureOnce(channel, 1);
    const want = await renderPalm({ identity: 'carol', hand: 'left', capture: 0, width: 320, height: 240 });
    expect(Buffer.from(live.data).equals(Buffer.from(want.data))).toBe(true);

    sim.present({ identity: 'carol', hand: 'left', attack: 'print' });
    const attack = await captureOnce(channel, 2);
    const wantAttack = await renderPalm({
      identity: 'carol',
      hand: 'left',
      capture: 0,
      attack: 'print',
      width: 320,
      height: 240,
    });
    expect(Buffer.from(attack.data).equals(Buffer.from(wantAttack.data))).toBe(true);
    expect(Buffer.from(attack.data).equals(Buffer.from(live.data))).toBe(false);
  });
});
