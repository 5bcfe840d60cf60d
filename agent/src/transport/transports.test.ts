import { decodeHidOutputReport, encodeHidInputReports } from '@palmid/contracts/wire/hid-reports';
import { FirmwareSimulator, listenTcp, testPatternSource } from '@palmid/firmware-sim';
import { SerialPortMock } from 'serialport';

// The binding instance serialport itself uses (the package ships separate ESM and CJS builds).
const MockBinding = SerialPortMock.binding;

import { afterEach, describe, expect, it } from 'vitest';
import { ScannerDriver } from '../driver/scanner-driver.ts';
import { formatDeviceSpec, parseDeviceSpec } from './device-spec.ts';
import { HID_REPORT_SIZE, type HidDeviceLike, HidTransport, listHidDevices } from './hid.ts';
import { SerialTransport } from './serial.ts';
import { TcpTransport } from './tcp.ts';
import { TransportError } from './transport.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  MockBinding.reset();
});

describe('device specs', () => {
  it.each([
    ['serial:/dev/ttyUSB0', { kind: 'serial', path: '/dev/ttyUSB0' }],
    ['/dev/ttyACM1', { kind: 'serial', path: '/dev/ttyACM1' }],
    ['tcp:127.0.0.1:7070', { kind: 'tcp', host: '127.0.0.1', port: 7070 }],
    ['tcp:scanner.local:4001', { kind: 'tcp', host: 'scanner.local', port: 4001 }],
    ['hid:1209:A1D5', { kind: 'hid', vendorId: 0x1209, productId: 0xa1d5 }],
    ['hid:/dev/hidraw3', { kind: 'hid', path: '/dev/hidraw3' }],
    ['sim', { kind: 'sim' }],
  ])('%s', (text, spec) => {
    expect(parseDeviceSpec(text)).toEqual(spec);
  });

  it.each(['', 'usb', 'tcp:7070', 'tcp:host:99999', 'hid:xyz', 'serial:'])(
    'rejects %j with the accepted forms',
    (text) => {
      expect(() => parseDeviceSpec(text)).toThrow(/expected serial:\/dev\/ttyUSB0 \| tcp:HOST:PORT/);
    },
  );

  it('formats back to the same text', () => {
    for (const t of ['serial:/dev/ttyUSB0', 'tcp:10.0.0.2:7070', 'hid:1209:a1d5', 'sim']) {
      expect(formatDeviceSpec(parseDeviceSpec(t))).toBe(t);
    }
  });
});

describe('SerialTransport (serialport MockBinding)', () => {
  const factory = async (path: string, baudRate: number) =>
    new SerialPortMock({ path, baudRate, autoOpen: false });

  it('passes bytes both ways', async () => {
    MockBinding.createPort('/dev/ttyMOCK0', { record: true });
    const t = new SerialTransport('/dev/ttyMOCK0', 115_200, factory);
    cleanups.push(() => t.close());
    const got: number[] = [];
    t.onData((b) => got.push(...b));
    await t.open();
    await t.write(Uint8Array.of(0xa5, 0x01));
    const port = (t as unknown as { port: SerialPortMock }).port;
    expect([...port.port!.recording]).toEqual([0xa5, 0x01]);
    port.port!.emitData(Buffer.from([1, 2, 3]));
    await new Promise((r) => setTimeout(r, 10));
    expect(got).toEqual([1, 2, 3]);
    expect(t.description).toBe('serial:/dev/ttyMOCK0 @ 115200 baud');
  });

  it('a missing port is NOT_FOUND with advice', async () => {
    const t = new SerialTransport('/dev/ttyMISSING', 115_200, factory);
    const err = await t.open().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).code).toBe('NOT_FOUND');
    expect((err as TransportError).message).toMatch(/no such device.*npm run agent -- devices/);
  });

  it('a port that disappears reports close with an error; our own close reports none', async () => {
    MockBinding.createPort('/dev/ttyMOCK1');
    const t = new SerialTransport('/dev/ttyMOCK1', 115_200, factory);
    const closes: Array<Error | undefined> = [];
    t.onClose((e) => closes.push(e));
    await t.open();
    const port = (t as unknown as { port: SerialPortMock }).port;
    // serialport's own path when a read fails because the device went away.
    (port as unknown as { _disconnected(e: Error): void })._disconnected(new Error('device disconnected'));
    await new Promise((r) => setTimeout(r, 10));
    expect(closes).toHaveLength(1);
    expect(closes[0]?.message).toMatch(/disconnected/);
    expect(t.isOpen).toBe(false);
    await t.open();
    await t.close();
    expect(closes).toHaveLength(2);
    expect(closes[1]).toBeUndefined();
  });
});

/** A fake HID device that behaves like a scanner speaking the stream-over-reports framing. */
function fakeHid() {
  const listeners: { data: Array<(b: Buffer) => void>; error: Array<(e: Error) => void> } = {
    data: [],
    error: [],
  };
  const written: number[][] = [];
  const dev: HidDeviceLike & { reports: number[][]; send(bytes: number[]): void; fail(e: Error): void } = {
    reports: written,
    async write(data) {
      written.push([...data]);
      return data.length;
    },
    async close() {},
    on(event: 'data' | 'error', l: never) {
      (listeners[event] as unknown[]).push(l);
      return dev;
    },
    send(bytes) {
      for (let off = 0; off < bytes.length; off += 63) {
        const n = Math.min(63, bytes.length - off);
        const report = Buffer.alloc(HID_REPORT_SIZE);
        report[0] = n;
        Buffer.from(bytes.slice(off, off + n)).copy(report, 1);
        for (const l of listeners.data) l(report);
      }
    },
    fail(e) {
      for (const l of listeners.error) l(e);
    },
  };
  return dev;
}

describe('HidTransport', () => {
  it('splits writes into 64-byte reports with report id 0 and a length byte', async () => {
    const dev = fakeHid();
    const t = new HidTransport({ vendorId: 0x1209, productId: 0xa1d5 }, async () => dev);
    await t.open();
    const bytes = Uint8Array.from({ length: 130 }, (_, i) => i);
    await t.write(bytes);
    expect(dev.reports.map((r) => r.length)).toEqual([64, 64, 64]);
    expect(dev.reports.map((r) => [r[0], r[1]])).toEqual([
      [0, 62],
      [0, 62],
      [0, 6],
    ]);
    expect(dev.reports.flatMap((r) => r.slice(2, 2 + r[1]!))).toEqual([...bytes]);
    expect(t.description).toBe('hid:1209:a1d5');
  });

  it('reassembles the stream from input reports, ignoring padding', async () => {
    const dev = fakeHid();
    const t = new HidTransport({ path: '/dev/hidraw0' }, async () => dev);
    const got: number[] = [];
    t.onData((b) => got.push(...b));
    await t.open();
    const stream = Array.from({ length: 200 }, (_, i) => (i * 7) & 0xff);
    dev.send(stream);
    expect(got).toEqual(stream);
  });

  it('a read error (unplug) closes the transport with that error', async () => {
    const dev = fakeHid();
    const t = new HidTransport({ path: '/dev/hidraw0' }, async () => dev);
    const closes: Array<Error | undefined> = [];
    t.onClose((e) => closes.push(e));
    await t.open();
    dev.fail(new Error('could not read from HID device'));
    expect(closes.map((e) => e?.message)).toEqual(['could not read from HID device']);
    expect(t.isOpen).toBe(false);
    await expect(t.write(Uint8Array.of(1))).rejects.toMatchObject({ code: 'CLOSED' });
  });

  it('an open failure names the device and what to do', async () => {
    const t = new HidTransport({ vendorId: 1, productId: 2 }, async () => {
      throw new Error('cannot open device with vendor id 0x1 and product id 0x2');
    });
    await expect(t.open()).rejects.toThrow(/hid:0001:0002: cannot open .*npm run agent -- devices/);
  });

  it('node-hid is loaded lazily; without libusb the error says how to fix it', async () => {
    const outcome = await listHidDevices().then(
      (devices) => ({ ok: true as const, devices }),
      (err: unknown) => ({ ok: false as const, err }),
    );
    if (outcome.ok) {
      // libusb present (as on CI): enumeration works, whatever is plugged in.
      expect(Array.isArray(outcome.devices)).toBe(true);
    } else {
      expect(outcome.err).toBeInstanceOf(TransportError);
      expect(outcome.err).toMatchObject({ code: 'UNAVAILABLE' });
      expect((outcome.err as Error).message).toMatch(
        /install libusb .*libusb-1\.0-0\) or use a serial scanner/,
      );
    }
  });
});

describe('HID scanner end to end', () => {
  it('captures from the simulator with the stream carried in HID reports', async () => {
    const sim = new FirmwareSimulator({
      source: testPatternSource,
      autoPresent: { identity: 'h', hand: 'right' },
      captureMs: 10,
      autoPresentDelayMs: 1,
    });
    cleanups.push(() => sim.stop());
    // The scanner's USB side, framed by the shared codec's device end: unwrap output reports into the
    // link (a report that breaks the format throws), wrap the link's bytes into input reports.
    const opener = async (): Promise<HidDeviceLike> => {
      const link = sim.connectMemory();
      const data: Array<(b: Buffer) => void> = [];
      link.onData((bytes) => {
        for (const report of encodeHidInputReports(bytes)) for (const l of data) l(Buffer.from(report));
      });
      const dev: HidDeviceLike = {
        async write(report) {
          link.write(decodeHidOutputReport([...report]));
          return report.length;
        },
        async close() {
          link.close();
        },
        on(event: 'data' | 'error', l: never) {
          if (event === 'data') data.push(l);
          return dev;
        },
      };
      return dev;
    };
    const driver = new ScannerDriver(new HidTransport({ vendorId: 0x1209, productId: 0xa1d5 }, opener));
    cleanups.push(() => driver.close());
    expect((await driver.connect()).model).toMatch(/PV-320/);
    const img = await driver.capture();
    const want = await testPatternSource.render({
      identity: 'h',
      hand: 'right',
      capture: 0,
      width: 320,
      height: 240,
    });
    expect(Buffer.from(img.data).equals(Buffer.from(want.data))).toBe(true);
  });
});

describe('TcpTransport', () => {
  it('drives the simulator over TCP; refused connections are explained', async () => {
    const sim = new FirmwareSimulator({
      source: testPatternSource,
      autoPresent: { identity: 'a', hand: 'left' },
      captureMs: 10,
    });
    const ep = await listenTcp(sim, 0);
    cleanups.push(
      () => sim.stop(),
      () => ep.close(),
    );
    const driver = new ScannerDriver(new TcpTransport('127.0.0.1', ep.port), { reconnect: false });
    cleanups.push(() => driver.close());
    await driver.connect();
    const img = await driver.capture();
    expect(img.data.length).toBe(76_800);

    const closed = new Promise((r) => driver.once('disconnected', r));
    sim.unplug();
    await closed;
    expect(driver.state).toBe('disconnected');

    await ep.close();
    const err = await new TcpTransport('127.0.0.1', ep.port).open().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'NOT_FOUND' });
    expect((err as Error).message).toMatch(/connection refused \(is the simulator or bridge running\?\)/);
  });
});
