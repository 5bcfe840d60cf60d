import {
  decodeHidInputReport,
  encodeHidOutputReports,
  HID_REPORT_SIZE,
} from '@palmid/contracts/wire/hid-reports';
import { BaseTransport, TransportError } from './transport.ts';

/**
 * The wire protocol's byte stream carried in 64-byte HID reports (report ID 0); the framing of both
 * directions is shared/contracts/src/wire/hid-reports.ts. See docs/wire-protocol.md.
 */
export { HID_REPORT_SIZE };

/** The part of node-hid's HIDAsync we use. */
export interface HidDeviceLike {
  write(data: number[] | Buffer): Promise<number>;
  close(): Promise<void>;
  on(event: 'data', listener: (data: Buffer) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

export interface HidDeviceInfo {
  vendorId: number;
  productId: number;
  path?: string | undefined;
  product?: string | undefined;
  manufacturer?: string | undefined;
  serialNumber?: string | undefined;
}

export type HidTarget = { vendorId: number; productId: number } | { path: string };
export type HidOpener = (target: HidTarget) => Promise<HidDeviceLike>;

type NodeHid = typeof import('node-hid');

function hidUnavailable(err: unknown): TransportError {
  return new TransportError(
    'UNAVAILABLE',
    'USB HID support unavailable: node-hid could not be loaded — install libusb (Debian/Ubuntu: ' +
      `sudo apt-get install libusb-1.0-0) or use a serial scanner. Cause: ${err instanceof Error ? err.message : String(err)}`,
  );
}

/** The native library is missing (not: the device could not be opened). */
const isLoadFailure = (err: unknown) =>
  /libusb|cannot open shared object|Could not locate the bindings|NODE_MODULE_VERSION|dlopen/i.test(
    err instanceof Error ? err.message : String(err),
  );

/** node-hid is native and needs libusb/hidraw; load it only when HID is actually used. */
export async function loadNodeHid(): Promise<NodeHid> {
  try {
    const mod = (await import('node-hid')) as NodeHid & { default?: NodeHid };
    return mod.default ?? mod;
  } catch (err) {
    throw hidUnavailable(err);
  }
}

const defaultOpener: HidOpener = async (target) => {
  const hid = await loadNodeHid();
  try {
    return 'path' in target
      ? await hid.HIDAsync.open(target.path)
      : await hid.HIDAsync.open(target.vendorId, target.productId);
  } catch (err) {
    // node-hid loads its native binding on first use, so a missing libusb shows up here.
    throw isLoadFailure(err) ? hidUnavailable(err) : err;
  }
};

export async function listHidDevices(): Promise<HidDeviceInfo[]> {
  const hid = await loadNodeHid();
  try {
    return await hid.devicesAsync();
  } catch (err) {
    throw isLoadFailure(err) ? hidUnavailable(err) : err;
  }
}

const hex4 = (n: number) => n.toString(16).padStart(4, '0');

export class HidTransport extends BaseTransport {
  readonly kind = 'hid';
  readonly description: string;
  private device: HidDeviceLike | undefined;
  private closingByUs = false;

  constructor(
    private readonly target: HidTarget,
    private readonly opener: HidOpener = defaultOpener,
  ) {
    super();
    this.description =
      'path' in target ? `hid:${target.path}` : `hid:${hex4(target.vendorId)}:${hex4(target.productId)}`;
  }

  get isOpen(): boolean {
    return this.device !== undefined;
  }

  async open(): Promise<void> {
    if (this.device) return;
    let device: HidDeviceLike;
    try {
      device = await this.opener(this.target);
    } catch (err) {
      if (err instanceof TransportError) throw err;
      const msg = err instanceof Error ? err.message : String(err);
      const perm = /permission|access/i.test(msg);
      throw new TransportError(
        perm ? 'PERMISSION' : 'NOT_FOUND',
        perm
          ? `${this.description}: permission denied (install the udev rule from docs/kiosk-install.md)`
          : `${this.description}: cannot open (${msg}); list devices with: npm run agent -- devices`,
        { cause: err },
      );
    }
    this.device = device;
    this.closingByUs = false;
    device.on('data', (report: Buffer) => {
      const bytes = decodeHidInputReport(report);
      if (bytes.length > 0) this.emitData(bytes);
    });
    device.on('error', (err: Error) => {
      // node-hid reports an unplug as a read error; the device handle is dead afterwards.
      if (this.device !== device) return;
      this.device = undefined;
      void device.close().catch(() => {});
      this.emitClose(this.closingByUs ? undefined : err);
    });
  }

  async write(bytes: Uint8Array): Promise<void> {
    const device = this.device;
    if (!device) throw new TransportError('CLOSED', `${this.description}: not open`);
    for (const report of encodeHidOutputReports(bytes)) {
      try {
        await device.write([...report]);
      } catch (err) {
        throw new TransportError(
          'IO',
          `${this.description}: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
  }

  async close(): Promise<void> {
    const device = this.device;
    if (!device) return;
    this.closingByUs = true;
    this.device = undefined;
    await device.close().catch(() => {});
    this.emitClose(undefined);
  }
}
