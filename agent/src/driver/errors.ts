import { WireError } from '@palmid/contracts/wire/errors';
import { TransportError } from '../transport/transport.ts';

export const SCANNER_ERROR_CODES = [
  'NOT_CONNECTED',
  'TRANSPORT', // the port could not be opened (message says why)
  'TIMEOUT', // the device stopped answering
  'DISCONNECTED', // unplugged / link lost during an operation
  'DEVICE_ERROR', // the device refused a command
  'INCOMPATIBLE', // wrong protocol version or image format
  'CAPTURE_TIMEOUT', // nobody presented a palm in time
  'SENSOR_STUCK', // capture progress stopped
  'CAPTURE_FAILED', // palm removed, device lost the capture, …
  'CORRUPT_IMAGE', // image checksum mismatch
  'ABORTED',
  'BUSY', // a capture is already running
] as const;
export type ScannerErrorCode = (typeof SCANNER_ERROR_CODES)[number];

export class ScannerError extends Error {
  readonly code: ScannerErrorCode;
  constructor(code: ScannerErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ScannerError';
    this.code = code;
  }
}

/** Translate lower-layer failures into one error type with a technician-readable message. */
export function toScannerError(err: unknown, context: string): ScannerError {
  if (err instanceof ScannerError) return err;
  if (err instanceof TransportError) return new ScannerError('TRANSPORT', err.message, { cause: err });
  if (err instanceof WireError) {
    switch (err.code) {
      case 'TIMEOUT':
        return new ScannerError('TIMEOUT', `scanner stopped answering ${context}: ${err.message}`, {
          cause: err,
        });
      case 'DISCONNECTED':
        return new ScannerError('DISCONNECTED', `scanner disconnected ${context} (${err.message})`, {
          cause: err,
        });
      case 'NAK':
        return new ScannerError('DEVICE_ERROR', `${err.message} ${context}`, { cause: err });
      default:
        return new ScannerError('DEVICE_ERROR', `protocol error ${context}: ${err.message}`, { cause: err });
    }
  }
  return new ScannerError('DEVICE_ERROR', `${context}: ${err instanceof Error ? err.message : String(err)}`, {
    cause: err,
  });
}
