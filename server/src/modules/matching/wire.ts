import { AppError } from '@palmid/contracts/errors';

/**
 * A template as it arrives on the wire: base64 or base64url text of 1–1024 bytes. Only the encoding and
 * size are checked here; the format itself is checked once per request by `Matcher.validate`.
 */
export function templateBytesFromBase64(b64: string, field = 'palm.template'): Uint8Array {
  const bytes = Buffer.from(b64.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (bytes.length === 0 || bytes.length > 1024) {
    throw new AppError('INVALID_REQUEST', `Invalid ${field}: must be 1–1024 bytes of base64`, {
      field,
      reason: 'malformed',
    });
  }
  return new Uint8Array(bytes);
}
