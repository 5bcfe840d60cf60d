/** Why a link-level operation failed. Kept apart from the HTTP catalogue in `errors.ts`. */
export const WIRE_ERROR_CODES = [
  'TIMEOUT', // no answer after all retries
  'NAK', // the device refused the command (see `deviceCode`)
  'DISCONNECTED', // the link closed while waiting
  'BAD_PAYLOAD', // a frame arrived intact but its payload does not decode
  'UNKNOWN_TYPE', // a frame type this protocol version does not define
] as const;
export type WireErrorCode = (typeof WIRE_ERROR_CODES)[number];

export class WireError extends Error {
  readonly code: WireErrorCode;
  readonly deviceCode: number | undefined;

  constructor(code: WireErrorCode, message: string, deviceCode?: number) {
    super(message);
    this.name = 'WireError';
    this.code = code;
    this.deviceCode = deviceCode;
  }
}
