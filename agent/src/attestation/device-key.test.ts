import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DeviceKey } from './device-key.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function key() {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-device-key-'));
  dirs.push(dir);
  const path = join(dir, 'agent.device-key.pem');
  return { path, counter: `${path}.counter`, key: DeviceKey.loadOrCreate(path).key };
}

describe('DeviceKey counter', () => {
  it('increases strictly, never falls below the clock, and is kept in the file before it is used', () => {
    const k = key();
    const a = k.key.nextCounter(1_000);
    const b = k.key.nextCounter(1_000);
    const c = k.key.nextCounter(5_000);
    expect([a, b, c]).toEqual([1_000, 1_001, 5_000]);
    expect(readFileSync(k.counter, 'utf8')).toBe('5000\n');
    expect(statSync(k.counter).mode & 0o777).toBe(0o600);
    expect(k.key.nextCounter(10)).toBe(5_001);
  });

  it('continues from the file across processes (another DeviceKey on the same file)', () => {
    const k = key();
    k.key.nextCounter(123_456_789);
    const again = DeviceKey.load(k.path);
    expect(again.nextCounter(1)).toBe(123_456_790);
    expect(k.key.nextCounter(1)).toBe(123_456_791);
  });

  it('a damaged counter file counts as lost: the clock takes over and the file holds only the new value', () => {
    const k = key();
    writeFileSync(k.counter, 'not a number, and longer than any counter\n');
    expect(k.key.nextCounter(42)).toBe(42);
    expect(readFileSync(k.counter, 'utf8')).toBe('42\n');
    expect(k.key.nextCounter(1)).toBe(43);
  });
});

describe('DeviceKey.prepare', () => {
  it('makes a key in memory only; save writes it once (mode 0600) and the same key loads again', () => {
    const dir = mkdtempSync(join(tmpdir(), 'palmid-device-key-'));
    dirs.push(dir);
    const path = join(dir, 'sub', 'agent.device-key.pem');
    const k = DeviceKey.prepare(path);
    expect(k.saved).toBe(false);
    expect(existsSync(path)).toBe(false);
    expect(k.save()).toBe(true);
    expect(k.saved).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(k.save()).toBe(false);
    expect(DeviceKey.prepare(path).publicKey).toBe(k.publicKey);
    expect(DeviceKey.prepare(path).saved).toBe(true);
  });

  it('does not overwrite a key another process wrote first', () => {
    const dir = mkdtempSync(join(tmpdir(), 'palmid-device-key-'));
    dirs.push(dir);
    const path = join(dir, 'agent.device-key.pem');
    const mine = DeviceKey.prepare(path);
    const theirs = DeviceKey.loadOrCreate(path).key;
    expect(mine.save()).toBe(false);
    expect(DeviceKey.load(path).publicKey).toBe(theirs.publicKey);
  });
});
