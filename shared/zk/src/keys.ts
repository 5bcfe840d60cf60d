import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  hkdfSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { type ServicePublicKey, ServicePublicKeySchema } from './schema.ts';

/**
 * The service's proof-signing key (Ed25519). Its public half is published at `GET /api/v1/keys/zk` and
 * pinned by vendors; the private half signs every proof and never leaves the service.
 */
export interface ServiceKeyPair {
  readonly privateKey: KeyObject;
  readonly publicKey: ServicePublicKey;
}

// DER prefix of a PKCS#8 Ed25519 private key; the 32-byte seed follows (RFC 8410).
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export function keyId(publicKey: KeyObject): string {
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  return createHash('sha256').update('palmid/zk/v1/key\u0000').update(raw).digest('hex').slice(0, 16);
}

function toPublicJwk(publicKey: KeyObject): ServicePublicKey {
  const jwk = publicKey.export({ format: 'jwk' });
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x ?? '', kid: keyId(publicKey), alg: 'EdDSA', use: 'sig' };
}

function fromPrivateKey(privateKey: KeyObject): ServiceKeyPair {
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new TypeError('service proof key must be Ed25519');
  return { privateKey, publicKey: toPublicJwk(createPublicKey(privateKey)) };
}

export function generateServiceKey(): ServiceKeyPair {
  return fromPrivateKey(generateKeyPairSync('ed25519').privateKey);
}

/** Deterministic key from a 32-byte seed (e.g. HKDF of the master key with info "palmid zk key"). */
export function serviceKeyFromSeed(seed: Uint8Array): ServiceKeyPair {
  if (seed.length !== 32) throw new RangeError('seed must be 32 bytes');
  const der = Buffer.concat([PKCS8_ED25519_PREFIX, seed]);
  return fromPrivateKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }));
}

/**
 * The service's proof key derived from its master key (HKDF-SHA256, fixed info string), so it needs no
 * storage of its own and rotates with the master key.
 */
export function deriveServiceKey(masterKey: Uint8Array): ServiceKeyPair {
  if (masterKey.length < 32) throw new RangeError('master key must be at least 32 bytes');
  const seed = hkdfSync('sha256', masterKey, 'palmid', 'palmid/zk/v1/service-proof-key', 32);
  return serviceKeyFromSeed(new Uint8Array(seed));
}

/** Parses a published key (untrusted JSON): shape, a valid Ed25519 point, and a kid that matches it. */
export function parseServicePublicKey(json: unknown): ServicePublicKey {
  const key = ServicePublicKeySchema.parse(json);
  const keyObject = publicKeyObject(key);
  if (key.kid !== keyId(keyObject)) throw new RangeError('service key kid does not match the key');
  return key;
}

export function publicKeyObject(key: ServicePublicKey): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.x }, format: 'jwk' });
}

export function signBytes(key: ServiceKeyPair, data: Uint8Array): string {
  return sign(null, data, key.privateKey).toString('base64url');
}

export function verifyBytes(key: ServicePublicKey, data: Uint8Array, signature: string): boolean {
  try {
    return verify(null, data, publicKeyObject(key), Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
}
