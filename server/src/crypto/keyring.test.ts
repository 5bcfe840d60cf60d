import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Keyring, loadMasterKey, open, seal } from './keyring.ts';

describe('keyring', () => {
  const ring = new Keyring(Buffer.alloc(32, 7));

  it('wraps and unwraps a data key bound to its user', () => {
    const { dataKey, wrapped } = ring.newDataKey('u1');
    expect(ring.unwrap('u1', wrapped).equals(dataKey)).toBe(true);
    expect(() => ring.unwrap('u2', wrapped)).toThrow();
  });

  it('seals values with associated data and detects tampering', () => {
    const key = Buffer.alloc(32, 1);
    const sealed = seal(key, Buffer.from('alice@example.com'), 'attr:u1:email');
    expect(sealed.includes(Buffer.from('alice'))).toBe(false);
    expect(open(key, sealed, 'attr:u1:email').toString()).toBe('alice@example.com');
    expect(() => open(key, sealed, 'attr:u1:phone')).toThrow();
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 1]! ^= 1;
    expect(() => open(key, flipped, 'attr:u1:email')).toThrow();
  });

  it('creates a 0600 key file once and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'palmid-key-'));
    const file = join(dir, 'sub', 'master.key');
    const a = loadMasterKey(undefined, file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadMasterKey(undefined, file).equals(a)).toBe(true);
    expect(readFileSync(file, 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(loadMasterKey('ab'.repeat(32), file).equals(Buffer.alloc(32, 0xab))).toBe(true);
  });
});
