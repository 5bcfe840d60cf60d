import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type ConfigError,
  DEFAULT_MODEL_PATH,
  envNameOf,
  loadConfig,
  parseConfigValue,
  writeConfigKey,
} from './config.ts';

const dir = mkdtempSync(join(tmpdir(), 'palmid-agent-config-'));
const file = (name: string, content: unknown) => {
  const p = join(dir, name);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
};
const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e as ConfigError;
  }
  throw new Error('expected an error');
};

describe('agent config', () => {
  it('defaults', () => {
    const { config, fileExists, sources } = loadConfig({
      file: undefined,
      env: { PALMID_AGENT_CONFIG: join(dir, 'none.json') },
    });
    expect(config).toEqual({
      serverUrl: 'http://127.0.0.1:8080',
      device: 'serial:/dev/ttyUSB0',
      modelPath: DEFAULT_MODEL_PATH,
      baudRate: 115_200,
      captureTimeoutMs: 30_000,
      sensor: 'simulator',
    });
    expect(fileExists).toBe(false);
    expect(sources.device).toBe('default');
  });

  it('layers file → env → flags, and records where each value came from', () => {
    const p = file('layers.json', {
      device: 'tcp:10.0.0.1:7070',
      baudRate: 9600,
      serverUrl: 'http://file:1',
    });
    const { config, sources } = loadConfig({
      file: p,
      env: { PALMID_BAUD_RATE: '57600', PALMID_SERVER_URL: 'http://env:2' },
      flags: { serverUrl: 'http://flag:3', device: undefined },
    });
    expect(config).toMatchObject({
      device: 'tcp:10.0.0.1:7070',
      baudRate: 57_600,
      serverUrl: 'http://flag:3',
    });
    expect(sources).toMatchObject({
      device: 'file',
      baudRate: 'env',
      serverUrl: 'flag',
      modelPath: 'default',
    });
  });

  it('PALMID_AGENT_CONFIG chooses the file', () => {
    const p = file('env-chosen.json', { device: 'sim' });
    expect(loadConfig({ env: { PALMID_AGENT_CONFIG: p } }).config.device).toBe('sim');
  });

  it('bad values stop with one line naming the key and its source', () => {
    expect(errorOf(() => loadConfig({ env: { PALMID_BAUD_RATE: 'fast' } })).message).toBe(
      'config: baudRate (from env PALMID_BAUD_RATE): must be a number',
    );
    const p = file('bad-device.json', { device: 'usb0' });
    const e = errorOf(() => loadConfig({ file: p, env: {} }));
    expect(e.key).toBe('device');
    expect(e.message).toMatch(
      /^config: device \(from config file .*bad-device\.json\): "usb0" is not a device/,
    );
    expect(errorOf(() => loadConfig({ env: {}, flags: { serverUrl: 'ftp://x' } })).message).toMatch(
      /serverUrl \(from flag --server-url\): must be an http\(s\) URL/,
    );
    expect(
      errorOf(() => loadConfig({ file: file('unknown.json', { devcie: 'sim' }), env: {} })).message,
    ).toMatch(/unknown key "devcie" in config file .*\(valid keys: serverUrl, .*\bdevice\b.*\)/);
    expect(errorOf(() => loadConfig({ file: file('broken.json', '{'), env: {} })).message).toMatch(
      /invalid JSON/,
    );
    expect(errorOf(() => loadConfig({ file: join(dir, 'missing.json'), env: {} })).message).toMatch(
      /not found/,
    );
    expect(errorOf(() => loadConfig({ file: file('array.json', '[]'), env: {} })).message).toMatch(
      /JSON object/,
    );
  });

  it('env names follow PALMID_<SNAKE_CASE>', () => {
    expect(envNameOf('serverUrl')).toBe('PALMID_SERVER_URL');
    expect(envNameOf('captureTimeoutMs')).toBe('PALMID_CAPTURE_TIMEOUT_MS');
  });

  it('config set validates, types the value and writes the file with mode 0600', () => {
    const p = join(dir, 'sub', 'agent.json');
    writeConfigKey(p, 'baudRate', parseConfigValue('baudRate', '230400'));
    writeConfigKey(p, 'deviceToken', parseConfigValue('deviceToken', 'pvs_secret'));
    expect(JSON.parse(readFileSync(p, 'utf8'))).toEqual({ baudRate: 230_400, deviceToken: 'pvs_secret' });
    expect(statSync(p).mode & 0o777).toBe(0o600);
    writeConfigKey(p, 'baudRate', undefined);
    expect(JSON.parse(readFileSync(p, 'utf8'))).toEqual({ deviceToken: 'pvs_secret' });
    expect(() => parseConfigValue('baudRate', '12')).toThrow(/baudRate: must be at least 1200/);
    expect(() => parseConfigValue('colour', 'red')).toThrow(/unknown key "colour"/);
  });

  it('sensor takes a known profile only, from the file or PALMID_SENSOR', () => {
    expect(parseConfigValue('sensor', 'grey-dark')).toBe('grey-dark');
    expect(() => parseConfigValue('sensor', 'webcam')).toThrow(
      /sensor: must be one of: simulator, contact-nir/,
    );
    const f = file('sensor.json', { sensor: 'colour' });
    expect(loadConfig({ file: f, env: {} }).config.sensor).toBe('colour');
    const env = loadConfig({ file: f, env: { PALMID_SENSOR: 'contactless-nir' } });
    expect(env.config.sensor).toBe('contactless-nir');
    expect(env.sources.sensor).toBe('env');
  });
});
