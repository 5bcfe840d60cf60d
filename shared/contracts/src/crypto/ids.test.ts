import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ledgerId, pseudonym } from './ids.ts';

describe('pseudonym', () => {
  it('matches a known answer (HMAC-SHA256, key = user_id, message = vendor_id)', () => {
    // Known answer computed independently: HMAC-SHA256(key="user-1", msg="vendor-1").
    expect(pseudonym('user-1', 'vendor-1')).toBe(
      createHmac('sha256', 'user-1').update('vendor-1').digest('hex'),
    );
    expect(pseudonym('key', 'The quick brown fox jumps over the lazy dog')).toBe(
      'f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8',
    );
  });

  it('differs between vendors and is stable for one pair', () => {
    const u = '6f1c8a52-2a55-4c7e-9d7b-1e8c3f0a9b11';
    expect(pseudonym(u, 'a')).toBe(pseudonym(u, 'a'));
    expect(pseudonym(u, 'a')).not.toBe(pseudonym(u, 'b'));
    expect(pseudonym(u, 'a')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('does not swap key and message', () => {
    expect(pseudonym('a', 'b')).not.toBe(pseudonym('b', 'a'));
  });
});

describe('ledgerId', () => {
  it('is SHA-256(share || "ledger")', () => {
    expect(ledgerId('')).toBe(createHash('sha256').update('ledger').digest('hex'));
    // sha256("abcledger")
    expect(ledgerId('abc')).toBe(createHash('sha256').update('abcledger').digest('hex'));
    expect(ledgerId(new Uint8Array([0x61, 0x62, 0x63]))).toBe(ledgerId('abc'));
  });
});
