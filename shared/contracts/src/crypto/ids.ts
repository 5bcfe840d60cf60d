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

/**
 * The user-token share seen by one vendor (docs/vendor-api.md, "Ledger"): HMAC-SHA256 keyed with the user's
 * secret share over `vendor:` and the vendor id. Each vendor's ledger id is derived from its own share, so
 * two vendors never see the same ledger id for one user.
 */
export function vendorTokenShare(tokenShare: Uint8Array, vendorId: string): Buffer {
  return createHmac('sha256', tokenShare).update(`vendor:${vendorId}`, 'utf8').digest();
}

/** The ledger id one vendor sees for one user: `ledgerId` over that vendor's share. */
export function vendorLedgerId(tokenShare: Uint8Array, vendorId: string): string {
  return ledgerId(vendorTokenShare(tokenShare, vendorId));
}

export const HEX64 = /^[0-9a-f]{64}$/;
