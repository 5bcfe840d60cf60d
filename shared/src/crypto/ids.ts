import { createHash, createHmac } from 'node:crypto';

/**
 * Vendor pseudonym (docs/attributes.md, "Catalogue"; docs/vendor-api.md, "The result"): lowercase hex HMAC-SHA256 with the user id
 * (UTF-8) as key and the vendor id (UTF-8) as message. Stable per (user, vendor), unlinkable across vendors.
 */
export function pseudonym(userId: string, vendorId: string): string {
  return createHmac('sha256', Buffer.from(userId, 'utf8')).update(vendorId, 'utf8').digest('hex');
}

/**
 * Ledger identifier (docs/vendor-api.md, "Ledger"): lowercase hex SHA-256 over the user-token share followed by the
 * literal text `ledger`. Computed on the server only; the share itself never leaves the server.
 */
export function ledgerId(tokenShare: Uint8Array | string): string {
  const share = typeof tokenShare === 'string' ? Buffer.from(tokenShare, 'utf8') : tokenShare;
  return createHash('sha256').update(share).update('ledger', 'utf8').digest('hex');
}

export const HEX64 = /^[0-9a-f]{64}$/;
