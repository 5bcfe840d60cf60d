import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { deriveServiceKey, type ServiceKeyPair } from '@palmid/zk/keys';
import { ensurePrivateDir } from '../lib/private-files.ts';

/**
 * Envelope encryption: every user has a random 256-bit data key, stored only wrapped (AES-256-GCM) under
 * the master key. Values are sealed with AES-256-GCM under the data key with associated data naming what
 * the value is (user, field), so a ciphertext moved to another row or user does not decrypt.
 * Destroying the wrapped data key makes every value of that user unreadable (crypto-shredding).
 */
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 1;

export function seal(key: Uint8Array, plaintext: Uint8Array, aad: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), ct]);
}

export function open(key: Uint8Array, sealed: Uint8Array, aad: string): Buffer {
  const buf = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (buf.length < 1 + IV_BYTES + TAG_BYTES || buf[0] !== VERSION)
    throw new Error('sealed value is malformed');
  const iv = buf.subarray(1, 1 + IV_BYTES);
  const tag = buf.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(buf.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]);
}

/** A JSON value sealed under a user's data key; the AAD names the field and the user. */
export function sealFor(dataKey: Buffer, userId: string, field: string, value: unknown): Buffer {
  return seal(dataKey, Buffer.from(JSON.stringify(value), 'utf8'), `${field}:${userId}`);
}

export function openFor(dataKey: Buffer, userId: string, field: string, sealed: Uint8Array): unknown {
  return JSON.parse(open(dataKey, sealed, `${field}:${userId}`).toString('utf8'));
}

export class Keyring {
  readonly #master: Buffer;
  #zkKey: ServiceKeyPair | undefined;

  constructor(masterKey: Uint8Array) {
    if (masterKey.length !== 32) throw new Error('master key must be 32 bytes');
    this.#master = Buffer.from(masterKey);
  }

  /** A purpose-bound sub-key of the master key (HKDF-SHA256), e.g. for audit MACs or auth results. */
  derive(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.#master, Buffer.alloc(0), `palmid:${purpose}`, 32));
  }

  /**
   * The service's zero-knowledge proof key (Ed25519, HKDF of the master key; docs/zk-proofs.md): its public
   * half is published at GET /api/v1/keys/zk. The seed never leaves this object except inside the KeyObject.
   */
  zkServiceKey(): ServiceKeyPair {
    this.#zkKey ??= deriveServiceKey(this.#master);
    return this.#zkKey;
  }

  newDataKey(userId: string): { dataKey: Buffer; wrapped: Buffer } {
    const dataKey = randomBytes(32);
    return { dataKey, wrapped: seal(this.#master, dataKey, `dek:${userId}`) };
  }

  /** Wraps an existing data key under this master key (master-key rotation). */
  wrap(userId: string, dataKey: Uint8Array): Buffer {
    return seal(this.#master, dataKey, `dek:${userId}`);
  }

  /** True when `fn` succeeds: a sealed value opens under the key `fn` uses. */
  static opens(fn: () => unknown): boolean {
    try {
      fn();
      return true;
    } catch {
      return false;
    }
  }

  unwrap(userId: string, wrapped: Uint8Array): Buffer {
    return open(this.#master, wrapped, `dek:${userId}`);
  }

  mac(purpose: string, data: string): string {
    return createHmac('sha256', this.derive(purpose)).update(data, 'utf8').digest('hex');
  }
}

/**
 * The master key comes from PALMID_MASTER_KEY (64 hex) or from a key file created on first start with
 * mode 0600. The key file lives beside the database by default.
 */
export function loadMasterKey(hex: string | undefined, keyFile: string): Buffer {
  if (hex) return Buffer.from(hex, 'hex');
  if (existsSync(keyFile)) {
    const text = readFileSync(keyFile, 'utf8').trim();
    if (!/^[0-9a-fA-F]{64}$/.test(text))
      throw new Error(`master key file ${keyFile} must hold 64 hex characters`);
    return Buffer.from(text, 'hex');
  }
  ensurePrivateDir(dirname(keyFile));
  const key = randomBytes(32);
  writeFileSync(keyFile, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(keyFile, 0o600);
  return key;
}
