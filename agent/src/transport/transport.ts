/**
 * A byte pipe to a scanner. Implementations: serial (serialport), tcp (ser2net / simulator),
 * hid (node-hid, 64-byte reports), memory (in-process simulator), recording (wraps any other).
 * A transport can be opened again after it closed (that is how the driver reconnects).
 */
export interface Transport {
  readonly kind: string;
  /** Human-readable target, e.g. "serial /dev/ttyUSB0 @ 115200". */
  readonly description: string;
  readonly isOpen: boolean;
  /** Rejects with a TransportError whose message says what to do. */
  open(): Promise<void>;
  write(bytes: Uint8Array): Promise<void>;
  /** Closes the link; `onClose` listeners run with no error. */
  close(): Promise<void>;
  /** Releases anything owned beyond the link (e.g. an in-process simulator). */
  dispose?(): Promise<void>;
  onData(listener: (bytes: Uint8Array) => void): () => void;
  /** Runs on every close; `error` is set when the link was lost (unplug, I/O error), not closed by us. */
  onClose(listener: (error: Error | undefined) => void): () => void;
}

export type TransportErrorCode = 'NOT_FOUND' | 'PERMISSION' | 'BUSY' | 'UNAVAILABLE' | 'IO' | 'CLOSED';

export class TransportError extends Error {
  readonly code: TransportErrorCode;
  constructor(code: TransportErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransportError';
    this.code = code;
  }
}

/** Listener bookkeeping shared by the implementations. */
export abstract class BaseTransport implements Transport {
  abstract readonly kind: string;
  abstract readonly description: string;
  abstract readonly isOpen: boolean;
  abstract open(): Promise<void>;
  abstract write(bytes: Uint8Array): Promise<void>;
  abstract close(): Promise<void>;

  private readonly dataListeners = new Set<(bytes: Uint8Array) => void>();
  private readonly closeListeners = new Set<(error: Error | undefined) => void>();

  onData(listener: (bytes: Uint8Array) => void): () => void {
    this.dataListeners.add(listener);
    return () => this.dataListeners.delete(listener);
  }
  onClose(listener: (error: Error | undefined) => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }
  protected emitData(bytes: Uint8Array): void {
    for (const l of this.dataListeners) l(bytes);
  }
  protected emitClose(error: Error | undefined): void {
    for (const l of this.closeListeners) l(error);
  }
}

/** errno → a sentence a technician can act on. */
export function describeOpenError(target: string, err: unknown): TransportError {
  const e = err as NodeJS.ErrnoException;
  const msg = e?.message ?? String(err);
  if (e?.code === 'ENOENT' || /ENOENT|No such file|does not exist/i.test(msg)) {
    return new TransportError(
      'NOT_FOUND',
      `${target}: no such device (is the scanner plugged in? list devices with: npm run agent -- devices)`,
      { cause: err },
    );
  }
  if (e?.code === 'EACCES' || /EACCES|Permission denied/i.test(msg)) {
    return new TransportError(
      'PERMISSION',
      `${target}: permission denied (add the agent's user to the "dialout" group, or see docs/kiosk-install.md)`,
      { cause: err },
    );
  }
  if (/EBUSY|Cannot lock port|Resource temporarily unavailable/i.test(msg)) {
    return new TransportError(
      'BUSY',
      `${target}: in use by another program (stop it, or the palmid-agent service)`,
      {
        cause: err,
      },
    );
  }
  if (e?.code === 'ECONNREFUSED') {
    return new TransportError(
      'NOT_FOUND',
      `${target}: connection refused (is the simulator or bridge running?)`,
      {
        cause: err,
      },
    );
  }
  return new TransportError('IO', `${target}: ${msg}`, { cause: err });
}
