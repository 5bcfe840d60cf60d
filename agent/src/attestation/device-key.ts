import { createPublicKey, type KeyObject } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  existsSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import {
  type AttestInput,
  attestCapture,
  type CaptureAttestation,
  generateDeviceKey,
  privateKeyFromPem,
  publicKeyToString,
} from '@palmid/contracts/crypto/capture';

/**
 * The capture device's own key (docs/kiosk-install.md "Device key"): an Ed25519 key pair made here, on the
 * device, the first time it is needed. The private key stays in one file (mode 0600) beside the agent
 * config and never leaves the device; the server only ever sees the public key (bound at the first
 * `hello` with the provisioning secret) and signatures. A counter file beside it keeps the device counter
 * strictly increasing across restarts.
 */
export const KEY_FILE_SUFFIX = '.device-key.pem';

/**
 * Where the key lives: `deviceKeyFile` when set, else beside the config file and named after it
 * (`data/agent.json` → `data/agent.device-key.pem`), so two agents configured in one folder never share one.
 */
export function deviceKeyPath(configFile: string, deviceKeyFile?: string): string {
  return (
    deviceKeyFile ??
    join(dirname(configFile), `${basename(configFile, extname(configFile))}${KEY_FILE_SUFFIX}`)
  );
}

export class DeviceKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeviceKeyError';
  }
}

export interface KeyFileState {
  path: string;
  exists: boolean;
  /** permission bits, e.g. 0o600 */
  mode?: number;
}

export function keyFileState(path: string): KeyFileState {
  if (!existsSync(path)) return { path, exists: false };
  return { path, exists: true, mode: statSync(path).mode & 0o777 };
}

export class DeviceKey {
  private constructor(
    readonly path: string,
    readonly privateKey: KeyObject,
    /** A key made in memory and not yet written to `path` (see `prepare`). */
    private unsaved = false,
  ) {}

  /** Whether the key is on disk (a prepared key is not until `save`). */
  get saved(): boolean {
    return !this.unsaved;
  }

  /** The raw public key, base64url (what `hello` registers). */
  get publicKey(): string {
    return publicKeyToString(createPublicKey(this.privateKey));
  }

  /** Loads the key; refuses one that others can read. */
  static load(path: string): DeviceKey {
    const state = keyFileState(path);
    if (!state.exists) throw new DeviceKeyError(`no device key at ${path}`);
    if ((state.mode ?? 0) & 0o077)
      throw new DeviceKeyError(
        `device key ${path} is readable by others (mode ${state.mode?.toString(8)}); run: chmod 600 ${path}`,
      );
    try {
      return new DeviceKey(path, privateKeyFromPem(readFileSync(path, 'utf8')));
    } catch (err) {
      throw new DeviceKeyError(
        `device key ${path} is not a usable Ed25519 key (${err instanceof Error ? err.message : String(err)})`,
      );
    }
  }

  /** Loads the key, or makes one (mode 0600) when there is none yet. */
  static loadOrCreate(path: string): { key: DeviceKey; created: boolean } {
    const key = DeviceKey.prepare(path);
    if (key.saved) return { key, created: false };
    return key.save() ? { key, created: true } : { key: DeviceKey.load(path), created: false };
  }

  /**
   * Loads the key, or makes one in memory only: `save` writes it once the server has accepted the
   * device, so credentials the server refuses (a mistyped token) leave no key file behind.
   */
  static prepare(path: string): DeviceKey {
    if (existsSync(path)) return DeviceKey.load(path);
    return new DeviceKey(path, generateDeviceKey().privateKey, true);
  }

  /**
   * Writes a prepared key (mode 0600); true when it wrote one, false when the key was already on disk
   * or another agent process on this device wrote its own first (that one stays; this one was not saved).
   */
  save(): boolean {
    if (!this.unsaved) return false;
    mkdirSync(dirname(this.path), { recursive: true });
    const pem = this.privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    try {
      writeFileSync(this.path, pem, { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw new DeviceKeyError(
        `cannot write the device key ${this.path}: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    chmodSync(this.path, 0o600);
    this.unsaved = false;
    return true;
  }

  /**
   * The next device counter: above the last one used and never below the clock in ms, so counters keep
   * increasing even if the counter file is lost. Written before it is used.
   */
  nextCounter(now = Date.now()): number {
    const file = `${this.path}.counter`;
    const fd = openSync(file, constants.O_RDWR | constants.O_CREAT, 0o600);
    try {
      const buf = Buffer.alloc(64);
      const size = readSync(fd, buf, 0, buf.length, 0);
      const last = Number(buf.subarray(0, size).toString('utf8').trim()) || 0;
      const next = Math.max(last + 1, now);
      // Written in place, not truncated first: ext4 flushes a file rewritten after a truncate when it is
      // closed, which took milliseconds per capture on a busy disk (docs/performance.md). A larger counter
      // never has fewer digits, so it covers the old one; only a shorter one (after garbage) truncates.
      const text = `${next}\n`;
      writeSync(fd, text, 0);
      if (size > text.length) ftruncateSync(fd, text.length);
      return next;
    } finally {
      closeSync(fd);
    }
  }

  /** Signs one capture (shared/contracts/src/crypto/capture.ts). */
  attest(
    input: Omit<AttestInput, 'privateKey' | 'capturedAt' | 'counter'> & { capturedAt?: number },
  ): CaptureAttestation {
    const capturedAt = input.capturedAt ?? Date.now();
    return attestCapture({
      ...input,
      privateKey: this.privateKey,
      capturedAt,
      counter: this.nextCounter(capturedAt),
    });
  }
}
