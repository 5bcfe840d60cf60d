import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FirmwareSimulator, type SimulatorOptions, testPatternSource } from '@palmid/firmware-sim';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryTransport } from '../transport/memory.ts';
import { RecordingTransport } from '../transport/recording.ts';
import { ScannerError } from './errors.ts';
import { type CaptureProgress, type DriverOptions, ScannerDriver } from './scanner-driver.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

const DEMO = { identity: 'demo', hand: 'right' } as const;

function setup(sim: SimulatorOptions = {}, driver: DriverOptions = {}) {
  const device = new FirmwareSimulator({
    source: testPatternSource,
    captureMs: 20,
    autoPresent: DEMO,
    autoPresentDelayMs: 5,
    ...sim,
  });
  const transport = new MemoryTransport(() => device.connectMemory(), 'memory');
  const scanner = new ScannerDriver(transport, {
    // Generous enough for a loaded CI machine; fault tests below pay this per lost frame.
    timeoutMs: 100,
    retries: 4,
    pollMs: 10,
    stallTimeoutMs: 150,
    reconnectInitialMs: 20,
    reconnectMaxMs: 100,
    ...driver,
  });
  cleanups.push(async () => {
    await scanner.close();
    device.stop();
  });
  return { device, scanner, transport };
}

async function expected(capture = 0, palm: { identity: string; hand: 'left' | 'right' } = DEMO) {
  return (await testPatternSource.render({ ...palm, capture, width: 320, height: 240 })).data;
}

async function failure(p: Promise<unknown>): Promise<ScannerError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ScannerError);
  return err as ScannerError;
}

describe('ScannerDriver over the in-memory link', () => {
  it('identifies the device', async () => {
    const { scanner } = setup();
    const info = await scanner.connect();
    expect(info).toMatchObject({
      protocol: 1,
      width: 320,
      height: 240,
      bitsPerPixel: 8,
      firmware: '1.4.0-sim',
    });
    expect(scanner.state).toBe('connected');
  });

  it('captures the presented palm byte-exactly, reporting progress', async () => {
    const { scanner } = setup({}, { chunkSize: 4000 });
    await scanner.connect();
    const seen: CaptureProgress[] = [];
    const img = await scanner.capture({ onProgress: (p) => seen.push(p) });
    expect(img.width).toBe(320);
    expect(img.height).toBe(240);
    expect(Buffer.from(img.data).equals(Buffer.from(await expected(0)))).toBe(true);
    const transfer = seen.filter((p) => p.phase === 'transferring').map((p) => p.done);
    expect(transfer[0]).toBe(0);
    expect(transfer.at(-1)).toBe(76800);
    expect([...transfer].sort((a, b) => a - b)).toEqual(transfer);
    expect(seen.at(-1)?.phase).toBe('done');
    // Device chunk limit (1024) wins over a larger requested chunk size.
    expect(transfer).toContain(1024);
  });

  it('a second capture of the same hand is a new capture (pose varies)', async () => {
    const { scanner } = setup();
    await scanner.connect();
    await scanner.capture();
    const second = await scanner.capture();
    expect(Buffer.from(second.data).equals(Buffer.from(await expected(1)))).toBe(true);
  });

  it('recovers from garbage on the line and counts what it dropped', async () => {
    const { scanner, device } = setup();
    await scanner.connect();
    device.injectFault({ kind: 'garbage', bytes: 40, probability: 1 });
    const img = await scanner.capture();
    expect(Buffer.from(img.data).equals(Buffer.from(await expected(0)))).toBe(true);
    expect(scanner.stats!.droppedBytes).toBeGreaterThan(40 * 70);
  });

  it('drops frames with a bad CRC and retries until the image is complete', async () => {
    const { scanner, device } = setup({ seed: 7 });
    await scanner.connect();
    device.injectFault({ kind: 'crc-noise', probability: 0.1 });
    const img = await scanner.capture();
    expect(Buffer.from(img.data).equals(Buffer.from(await expected(0)))).toBe(true);
    expect(scanner.stats!.badCrc + scanner.stats!.badHeaders).toBeGreaterThan(0);
    expect(scanner.stats!.retries).toBeGreaterThan(0);
  });

  it('heavy line noise (30 % of frames corrupted) with the default retries: the image still arrives', async () => {
    const { scanner, device } = setup({ seed: 11 }, { retries: 2, timeoutMs: 40 });
    await scanner.connect();
    device.injectFault({ kind: 'crc-noise', probability: 0.3 });
    const img = await scanner.capture();
    expect(Buffer.from(img.data).equals(Buffer.from(await expected(0)))).toBe(true);
    expect(scanner.stats!.retries).toBeGreaterThan(10);
  }, 60_000);

  it('survives truncated frames', async () => {
    const { scanner, device } = setup({ seed: 3 });
    await scanner.connect();
    device.injectFault({ kind: 'truncate', probability: 0.08 });
    const img = await scanner.capture();
    expect(Buffer.from(img.data).equals(Buffer.from(await expected(0)))).toBe(true);
    expect(scanner.stats!.timeouts).toBeGreaterThan(0);
  });

  it('ignores frame types it does not know, and counts them', async () => {
    const { scanner, device } = setup();
    await scanner.connect();
    device.injectFault({ kind: 'unknown-frames', probability: 1 });
    await scanner.capture();
    expect(scanner.stats!.unknownFrames).toBeGreaterThan(70);
  });

  it('works with a slow device that still answers within the timeout', async () => {
    const { scanner, device } = setup({}, { timeoutMs: 200, chunkSize: 1024 });
    await scanner.connect();
    device.injectFault({ kind: 'slow', delayMs: 3 });
    const img = await scanner.capture();
    expect(img.data.length).toBe(76800);
    expect(scanner.stats!.timeouts).toBe(0);
  });

  it('a device slower than the timeout gives a clear TIMEOUT, and the link is usable again afterwards', async () => {
    const { scanner, device } = setup({}, { timeoutMs: 80, retries: 1 });
    await scanner.connect();
    device.injectFault({ kind: 'slow', delayMs: 400 });
    const err = await failure(scanner.capture());
    expect(err.code).toBe('TIMEOUT');
    expect(err.message).toMatch(/stopped answering while starting capture/);
    device.clearFaults();
    await new Promise((r) => setTimeout(r, 500)); // late answers arrive and are discarded
    const img = await scanner.capture();
    expect(img.data.length).toBe(76800);
    expect(scanner.stats!.unmatched).toBeGreaterThan(0);
  });

  it('a device that never answers fails connect with a clear message instead of hanging', async () => {
    const { scanner, device } = setup({}, { timeoutMs: 30, retries: 2 });
    device.injectFault({ kind: 'silent' });
    const t0 = Date.now();
    const err = await failure(scanner.connect());
    expect(err.code).toBe('TIMEOUT');
    expect(err.message).toMatch(/no answer from a scanner on memory/);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(scanner.state).toBe('disconnected');
  });

  it('a device that stops answering mid-capture fails the capture with TIMEOUT', async () => {
    const { scanner, device } = setup({}, { timeoutMs: 30, retries: 1 });
    await scanner.connect();
    device.on('command', (m: { kind: string }) => {
      if (m.kind === 'READ_IMAGE') device.injectFault({ kind: 'silent' });
    });
    const err = await failure(scanner.capture());
    expect(err.code).toBe('TIMEOUT');
    expect(err.message).toMatch(/during image transfer/);
  });

  it('unplug mid-image: clear DISCONNECTED error, automatic reconnect, next capture works', async () => {
    const { scanner, device } = setup();
    await scanner.connect();
    device.injectFault({ kind: 'unplug-mid-image', atOffset: 30_000, forMs: 50 });
    const events: string[] = [];
    scanner.on('disconnected', () => events.push('disconnected'));
    const reconnected = new Promise((r) => scanner.once('reconnected', r));
    const err = await failure(scanner.capture());
    expect(err.code).toBe('DISCONNECTED');
    expect(err.message).toMatch(/disconnected during image transfer \(30720\/76800 bytes\)/);
    await reconnected;
    expect(events).toEqual(['disconnected']);
    expect(scanner.state).toBe('connected');
    const img = await scanner.capture();
    expect(img.data.length).toBe(76800);
  });

  it('keeps retrying with backoff while unplugged, and a capture waits for the device to come back', async () => {
    const { scanner, device } = setup();
    await scanner.connect();
    device.unplug();
    await new Promise((r) => setTimeout(r, 20));
    expect(scanner.state).toBe('reconnecting');
    setTimeout(() => device.replug(), 150);
    const img = await scanner.capture({ timeoutMs: 5000 });
    expect(img.data.length).toBe(76800);
  });

  it('a stuck sensor is detected, the scanner reset, and the next capture works', async () => {
    const { scanner, device } = setup();
    await scanner.connect();
    device.injectFault({ kind: 'stuck-sensor' });
    const err = await failure(scanner.capture());
    expect(err.code).toBe('SENSOR_STUCK');
    expect(err.message).toMatch(/sensor stopped at 40%/);
    expect(device.snapshot().faults).toEqual([]); // RESET cleared it
    await expect(scanner.capture()).resolves.toMatchObject({ width: 320 });
  });

  it('palm removed during capture → CAPTURE_FAILED naming the reason', async () => {
    const { scanner, device } = setup({ captureMs: 200 });
    await scanner.connect();
    device.on('state', (s: string) => {
      if (s === 'CAPTURING') setTimeout(() => device.remove(), 30);
    });
    const err = await failure(scanner.capture());
    expect(err.code).toBe('CAPTURE_FAILED');
    expect(err.message).toMatch(/palm removed during capture/);
  });

  it('nobody presents a palm → CAPTURE_TIMEOUT, and the device is disarmed', async () => {
    const { scanner, device } = setup({ autoPresent: false });
    await scanner.connect();
    const err = await failure(scanner.capture({ timeoutMs: 150 }));
    expect(err.code).toBe('CAPTURE_TIMEOUT');
    expect(err.message).toMatch(/no palm presented/);
    expect(device.snapshot().state).toBe('IDLE');
  });

  it('the device giving up on the palm itself is reported as CAPTURE_TIMEOUT', async () => {
    const { scanner } = setup({ autoPresent: false, noPalmTimeoutMs: 40 });
    await scanner.connect();
    const err = await failure(scanner.capture({ timeoutMs: 2000 }));
    expect(err.code).toBe('CAPTURE_TIMEOUT');
    expect(err.message).toMatch(/NO_PALM_TIMEOUT/);
  });

  it('an abort signal stops a capture', async () => {
    const { scanner } = setup({ autoPresent: false });
    await scanner.connect();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 40);
    const err = await failure(scanner.capture({ signal: ac.signal }));
    expect(err.code).toBe('ABORTED');
  });

  it('refuses a second capture while one is running', async () => {
    const { scanner } = setup({ captureMs: 100 });
    await scanner.connect();
    const first = scanner.capture();
    const err = await failure(scanner.capture());
    expect(err.code).toBe('BUSY');
    await expect(first).resolves.toMatchObject({ width: 320 });
  });

  it('a capture asked for while connecting waits for the connection', async () => {
    const { scanner } = setup();
    const connecting = scanner.connect();
    const img = await scanner.capture();
    expect(img.data.length).toBe(76_800);
    await connecting;
  });

  it('reports palm events and device refusals', async () => {
    const { scanner, device } = setup();
    await scanner.connect();
    const palm: boolean[] = [];
    scanner.on('palm', (p: boolean) => palm.push(p));
    device.present({ identity: 'x', hand: 'left' });
    device.remove();
    await new Promise((r) => setTimeout(r, 20));
    expect(palm).toEqual([true, false]);
    const err = await failure(scanner.setExposure(50, 1));
    expect(err.code).toBe('DEVICE_ERROR');
    expect(err.message).toMatch(/OUT_OF_RANGE/);
    await scanner.setExposure(8000, 4);
    expect(device.snapshot().exposureUs).toBe(8000);
  });

  it('opening a missing device is a TRANSPORT error with advice', async () => {
    const { scanner, device } = setup();
    device.unplug();
    const err = await failure(scanner.connect());
    expect(err.code).toBe('TRANSPORT');
    expect(err.message).toMatch(/unplugged/);
  });

  it('records traffic both ways through a RecordingTransport, also as JSON lines in a file', async () => {
    const device = new FirmwareSimulator({ source: testPatternSource });
    const file = join(mkdtempSync(join(tmpdir(), 'palmid-rec-')), 'trace.jsonl');
    const rec = new RecordingTransport(new MemoryTransport(() => device.connectMemory()), file);
    const scanner = new ScannerDriver(rec);
    cleanups.push(async () => {
      await scanner.close();
      device.stop();
    });
    await scanner.connect();
    expect(Buffer.from(rec.bytes('tx')).toString('hex')).toBe('a5010100007dd362'); // GET_INFO, seq 1
    expect(rec.bytes('rx')[1]).toBe(0x81);
    expect(rec.entries[0]?.dir).toBe('open');
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.dir)).toEqual(rec.entries.map((e) => e.dir));
    expect(lines.find((l) => l.dir === 'tx')?.data).toBe('a5010100007dd362');
  });
});
