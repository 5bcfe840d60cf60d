import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeFrame, type Frame } from '@palmid/contracts/wire/frame';
import { FrameParser } from '@palmid/contracts/wire/parser';
import { FirmwareSimulator, type SimulatorOptions, testPatternSource } from '@palmid/firmware-sim';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryTransport } from '../transport/memory.ts';
import { RecordingTransport } from '../transport/recording.ts';
import { BaseTransport, type Transport } from '../transport/transport.ts';
import { ScannerError } from './errors.ts';
import { type CaptureProgress, type DriverOptions, ScannerDriver } from './scanner-driver.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

const DEMO = { identity: 'demo', hand: 'right' } as const;

/** A driver on `transport` to `device`, closed (and the device stopped) after the test. */
function driverOn(device: FirmwareSimulator, transport: Transport, options?: DriverOptions): ScannerDriver {
  const scanner = new ScannerDriver(transport, options);
  cleanups.push(async () => {
    await scanner.close();
    device.stop();
  });
  return scanner;
}

function setup(sim: SimulatorOptions = {}, driver: DriverOptions = {}) {
  const device = new FirmwareSimulator({
    source: testPatternSource,
    captureMs: 20,
    autoPresent: DEMO,
    autoPresentDelayMs: 5,
    ...sim,
  });
  const transport = new MemoryTransport(() => device.connectMemory(), 'memory');
  const scanner = driverOn(device, transport, {
    // Generous enough for a loaded CI machine; fault tests below pay this per lost frame.
    timeoutMs: 100,
    retries: 4,
    pollMs: 10,
    stallTimeoutMs: 150,
    reconnectInitialMs: 20,
    reconnectMaxMs: 100,
    ...driver,
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
    // a truncated answer is noticed when the next one arrives (overtaken) or, last in line, by its timeout
    expect(scanner.stats!.overtaken + scanner.stats!.timeouts).toBeGreaterThan(0);
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
    // Only the timeouts are faked; the in-memory link still delivers (and closes) on real later turns.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
    };
    try {
      const { scanner, device } = setup({}, { timeoutMs: 30, retries: 2 });
      device.injectFault({ kind: 'silent' });
      let settled = false;
      const result = failure(scanner.connect()).finally(() => {
        settled = true;
      });
      // three attempts of 30 ms each: one tick short of that it is still waiting, at 90 ms it gives up
      for (let ms = 0; ms < 3 * 30 - 1; ms++) {
        await vi.advanceTimersByTimeAsync(1);
        await turns(3);
      }
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      for (let i = 0; i < 100 && !settled; i++) await turns(1); // the link closes on real turns
      expect(settled).toBe(true);
      const err = await result;
      expect(err.code).toBe('TIMEOUT');
      expect(err.message).toMatch(/no answer from a scanner on memory/);
      expect(scanner.state).toBe('disconnected');
    } finally {
      vi.useRealTimers();
    }
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
    // the chunks in flight fail together; the message names the oldest of them (window of 8 × 1 KiB)
    const at = Number(/disconnected during image transfer \((\d+)\/76800 bytes\)/.exec(err.message)?.[1]);
    expect(at).toBeLessThanOrEqual(30720);
    expect(at).toBeGreaterThanOrEqual(30720 - 8 * 1024);
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

  it('an abort during the windowed transfer stops it with one ABORT_CAPTURE', async () => {
    const { scanner, device } = setup();
    await scanner.connect();
    const commands: string[] = [];
    device.on('command', (m: { kind: string }) => commands.push(m.kind));
    const ac = new AbortController();
    const err = await failure(
      scanner.capture({
        signal: ac.signal,
        onProgress: (p) => {
          if (p.phase === 'transferring' && p.done >= 10 * 1024) ac.abort();
        },
      }),
    );
    expect(err.code).toBe('ABORTED');
    expect(commands.filter((k) => k === 'ABORT_CAPTURE')).toHaveLength(1);
    expect(commands.filter((k) => k === 'READ_IMAGE').length).toBeLessThan(75);
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
    const scanner = driverOn(device, rec);
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

  it('reads the image with several chunk requests in flight and recovers lost and corrupted chunks within the window', async () => {
    const device = new FirmwareSimulator({
      source: testPatternSource,
      captureMs: 20,
      autoPresent: DEMO,
      autoPresentDelayMs: 5,
    });
    // Between the driver and the simulator: counts READ_IMAGE sent and IMAGE_CHUNK received, flips a bit
    // in the first answers for the 5th and the last chunk (bad CRC) and drops the first for the 20th
    // (lost on the line).
    const damage = new Map<number, 'corrupt' | 'drop'>([
      [4 * 1024, 'corrupt'],
      [74 * 1024, 'corrupt'],
      [19 * 1024, 'drop'],
    ]);
    const line = new FaultyLine(new MemoryTransport(() => device.connectMemory(), 'memory'), (offset) => {
      const fate = damage.get(offset) ?? 'pass';
      damage.delete(offset);
      return fate;
    });
    // A timeout that no test run could sit out unnoticed: recovery has to come from the window itself.
    const scanner = driverOn(device, line, { timeoutMs: 60_000, pollMs: 10, readWindow: 6 });
    await scanner.connect();
    const img = await scanner.capture();
    expect(Buffer.from(img.data).equals(Buffer.from(await expected(0)))).toBe(true);
    expect(line.maxInFlight).toBe(6);
    const stats = scanner.stats!;
    expect(stats.badCrc).toBe(2);
    expect(stats.overtaken).toBe(1);
    expect(stats.timeouts).toBe(0);
    expect(stats.retries).toBe(3);
    expect(line.readsSent).toBe(75 + 3);
  });

  it('readWindow 1 reads one chunk per round trip', async () => {
    const device = new FirmwareSimulator({ source: testPatternSource, captureMs: 20, autoPresent: DEMO });
    const line = new FaultyLine(new MemoryTransport(() => device.connectMemory(), 'memory'), () => 'pass');
    const scanner = driverOn(device, line, { pollMs: 10, readWindow: 1 });
    await scanner.connect();
    const img = await scanner.capture();
    expect(Buffer.from(img.data).equals(Buffer.from(await expected(0)))).toBe(true);
    expect(line.maxInFlight).toBe(1);
  });
});

describe('ScannerDriver: the image-ready event', () => {
  it('onStart is called once, when START_CAPTURE has gone out and before the image is there', async () => {
    const { scanner, transport } = setup();
    await scanner.connect();
    // the type byte of every frame the driver writes (frame layout: docs/wire-protocol.md)
    const written: number[] = [];
    const write = transport.write.bind(transport);
    transport.write = (bytes: Uint8Array) => {
      written.push(bytes[1]!);
      return write(bytes);
    };
    let startedAfter: number[] | undefined;
    let calls = 0;
    const img = await scanner.capture({
      onStart: () => {
        calls += 1;
        startedAfter = [...written];
      },
    });
    expect(calls).toBe(1);
    expect(startedAfter).toEqual([0x02]); // START_CAPTURE, and nothing after it yet
    expect(written.length).toBeGreaterThan(1);
    expect(img.data.length).toBe(320 * 240);
  });

  it('an EVT_IMAGE_READY read together with the STATUS answer that still said capturing is not lost', async () => {
    const device = new FirmwareSimulator({ source: testPatternSource, captureMs: 30 });
    device.present(DEMO);
    const line = new CoalescingLine(new MemoryTransport(() => device.connectMemory(), 'memory'));
    // A poll interval no test run could sit out: the capture has to end on the event, not on a poll.
    const scanner = driverOn(device, line, { pollMs: 600_000, stallTimeoutMs: 600_000 });
    await scanner.connect();
    const img = await scanner.capture();
    expect(Buffer.from(img.data).equals(Buffer.from(await expected(0)))).toBe(true);
    // the STATUS answer (capturing) and the event did come in one read
    expect(line.coalesced).toBe(1);
  });
});

const READ_IMAGE = 0x04;
const IMAGE_CHUNK = 0x84;
const STATUS = 0x83;
const EVT_IMAGE_READY = 0xc3;
const CAPTURING = 2;

/** A transport in front of another one: passes everything through; what the device sends goes to `fromDevice`. */
abstract class LineInFront extends BaseTransport {
  constructor(protected readonly inner: Transport) {
    super();
    inner.onData((bytes) => this.fromDevice(bytes));
    inner.onClose((err) => this.emitClose(err));
  }
  get isOpen(): boolean {
    return this.inner.isOpen;
  }
  open(): Promise<void> {
    return this.inner.open();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  write(bytes: Uint8Array): Promise<void> {
    return this.inner.write(bytes);
  }
  protected abstract fromDevice(bytes: Uint8Array): void;
}

/**
 * A transport that holds back each STATUS answer reporting a capture still running until the device
 * sends its next frame, and hands both to the driver in one read: what a host that reads its line late
 * sees when the capture ends just after the device answered a poll.
 */
class CoalescingLine extends LineInFront {
  readonly kind = 'coalescing';
  readonly description = 'coalescing line';
  coalesced = 0;
  private held: Uint8Array | undefined;
  private readonly deviceFrames = new FrameParser();

  protected fromDevice(bytes: Uint8Array): void {
    for (const f of this.deviceFrames.push(bytes)) {
      const frame = encodeFrame(f);
      if (this.held) {
        if (f.type === EVT_IMAGE_READY) this.coalesced += 1;
        this.emitData(Buffer.concat([this.held, frame]));
        this.held = undefined;
      } else if (f.type === STATUS && f.payload[0] === CAPTURING) this.held = frame;
      else this.emitData(frame);
    }
  }
}

/** A transport in front of another one that watches the image transfer and damages chosen chunk answers. */
class FaultyLine extends LineInFront {
  readonly kind = 'faulty';
  readonly description = 'faulty line';
  readsSent = 0;
  chunksSeen = 0;
  maxInFlight = 0;
  private readonly hostFrames = new FrameParser();
  private readonly deviceFrames = new FrameParser();

  constructor(
    inner: Transport,
    /** What happens to the answer carrying the image bytes at `offset`. */
    private readonly fate: (offset: number) => 'pass' | 'corrupt' | 'drop',
  ) {
    super(inner);
  }
  override async write(bytes: Uint8Array): Promise<void> {
    for (const f of this.hostFrames.push(bytes)) {
      if (f.type !== READ_IMAGE) continue;
      this.readsSent += 1;
      this.maxInFlight = Math.max(this.maxInFlight, this.readsSent - this.chunksSeen);
    }
    await this.inner.write(bytes);
  }
  protected fromDevice(bytes: Uint8Array): void {
    const out: Uint8Array[] = [];
    for (const f of this.deviceFrames.push(bytes)) out.push(this.judge(f));
    for (const b of out) if (b.length > 0) this.emitData(b);
  }
  private judge(f: Frame): Uint8Array {
    const bytes = encodeFrame(f);
    if (f.type !== IMAGE_CHUNK) return bytes;
    this.chunksSeen += 1;
    // IMAGE_CHUNK payload: captureId u16, offset u32, then the bytes
    const offset = Buffer.from(f.payload).readUInt32LE(2);
    const fate = this.fate(offset);
    if (fate === 'drop') return new Uint8Array(0);
    if (fate === 'corrupt') bytes[bytes.length - 4]! ^= 0x10; // a payload bit: the CRC-16 fails
    return bytes;
  }
}
