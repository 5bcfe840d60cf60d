import { readdir } from 'node:fs/promises';
import { BaseTransport, describeOpenError, TransportError } from './transport.ts';

/** The part of serialport's SerialPortStream we use (so tests can pass SerialPortMock). */
export interface SerialPortLike {
  readonly isOpen: boolean;
  open(callback: (err: Error | null) => void): void;
  write(data: Buffer, callback?: (err: Error | null | undefined) => void): boolean;
  drain(callback: (err: Error | null) => void): void;
  flush(callback?: (err: Error | null) => void): void;
  close(callback?: (err: Error | null) => void): void;
  on(event: 'data', listener: (data: Buffer) => void): unknown;
  on(event: 'close', listener: (err?: Error | null) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

export type SerialPortFactory = (path: string, baudRate: number) => Promise<SerialPortLike>;

export interface SerialPortInfo {
  path: string;
  manufacturer?: string | undefined;
  serialNumber?: string | undefined;
  vendorId?: string | undefined;
  productId?: string | undefined;
}

async function loadSerialport(): Promise<typeof import('serialport')> {
  try {
    return await import('serialport');
  } catch (err) {
    throw new TransportError(
      'UNAVAILABLE',
      `serial support unavailable: the serialport native binding did not load (${err instanceof Error ? err.message : String(err)})`,
    );
  }
}

const defaultFactory: SerialPortFactory = async (path, baudRate) => {
  const { SerialPort } = await loadSerialport();
  return new SerialPort({ path, baudRate, autoOpen: false }) as unknown as SerialPortLike;
};

/**
 * Serial ports on this machine. serialport's list needs udevadm on Linux; minimal kiosk images
 * may lack it, so fall back to the USB tty nodes in /dev.
 */
export async function listSerialPorts(): Promise<SerialPortInfo[]> {
  try {
    const { SerialPort } = await loadSerialport();
    return await SerialPort.list();
  } catch (err) {
    if (process.platform !== 'linux') throw err;
    const names = await readdir('/dev').catch(() => [] as string[]);
    return names
      .filter((n) => /^tty(USB|ACM)\d+$/.test(n))
      .sort()
      .map((n) => ({ path: `/dev/${n}` }));
  }
}

/** USB-serial (CDC-ACM / FTDI) scanner, or any tty such as the simulator's pty. */
export class SerialTransport extends BaseTransport {
  readonly kind = 'serial';
  readonly description: string;
  private port: SerialPortLike | undefined;
  private closingByUs = false;

  constructor(
    private readonly path: string,
    private readonly baudRate = 115_200,
    private readonly factory: SerialPortFactory = defaultFactory,
  ) {
    super();
    this.description = `serial:${path} @ ${baudRate} baud`;
  }

  get isOpen(): boolean {
    return this.port?.isOpen ?? false;
  }

  async open(): Promise<void> {
    if (this.isOpen) return;
    const port = await this.factory(this.path, this.baudRate);
    await new Promise<void>((resolve, reject) =>
      port.open((err) => (err ? reject(describeOpenError(`serial:${this.path}`, err)) : resolve())),
    );
    // Whatever the device sent before we were listening belongs to an earlier session.
    await new Promise<void>((resolve) => port.flush(() => resolve()));
    this.port = port;
    this.closingByUs = false;
    let lastError: Error | undefined;
    port.on('data', (b: Buffer) => this.emitData(new Uint8Array(b.buffer, b.byteOffset, b.length)));
    port.on('error', (err: Error) => {
      lastError = err;
    });
    port.on('close', (err?: Error | null) => {
      if (this.port === port) this.port = undefined;
      this.emitClose(this.closingByUs ? undefined : (err ?? lastError ?? new Error('serial port closed')));
    });
  }

  write(bytes: Uint8Array): Promise<void> {
    const port = this.port;
    if (!port?.isOpen) return Promise.reject(new TransportError('CLOSED', `${this.description}: not open`));
    return new Promise((resolve, reject) => {
      port.write(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length), (err) => {
        if (err) reject(new TransportError('IO', `${this.description}: ${err.message}`));
        else
          port.drain((e) =>
            e ? reject(new TransportError('IO', `${this.description}: ${e.message}`)) : resolve(),
          );
      });
    });
  }

  close(): Promise<void> {
    const port = this.port;
    if (!port?.isOpen) return Promise.resolve();
    this.closingByUs = true;
    return new Promise((resolve) => port.close(() => resolve()));
  }
}
