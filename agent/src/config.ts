import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DEFAULT_MODEL_PATH } from '@palmid/palm/capture/model-path';
import { DEFAULT_SENSOR, SENSOR_NAMES } from '@palmid/palm/capture/sensor-profiles';
import { z } from 'zod';
import { parseDeviceSpec } from './transport/device-spec.ts';

/** The palm pipeline's feature model, shipped with @palmid/palm (shared/palm/models). */
export { DEFAULT_MODEL_PATH };
export const DEFAULT_CONFIG_FILE = './data/agent.json';

const deviceSpec = z.string().superRefine((value, ctx) => {
  try {
    parseDeviceSpec(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
  }
});

/**
 * Agent configuration: one schema, layered defaults → config file → env (PALMID_<KEY_IN_SNAKE_CASE>)
 * → command-line flags. Types come from the schema.
 */
export const agentConfigSchema = z
  .object({
    /** Base URL of the palmid server. */
    serverUrl: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
      .default('http://127.0.0.1:8080'),
    /** Kiosk credential from `npm run admin -- pvs create` (sent as Bearer on /ws/pvs). */
    deviceToken: z.string().min(1, 'must not be empty').optional(),
    /**
     * One-time provisioning secret from `npm run admin -- pvs create` (or `pvs rekey`): the first hello
     * with it registers this device's public key. Useless once used.
     */
    provisioningSecret: z.string().min(1, 'must not be empty').optional(),
    /** The device's private key (Ed25519, mode 0600); default: device-key.pem beside the config file. */
    deviceKeyFile: z.string().min(1).optional(),
    /** Kiosk id from `npm run admin -- pvs create` (announced in hello; must match the token). */
    pvsId: z.uuid({ error: 'must be a UUID' }).optional(),
    /** serial:/dev/ttyUSB0 | tcp:HOST:PORT | hid:VID:PID | hid:/dev/hidrawN | sim */
    device: deviceSpec.default('serial:/dev/ttyUSB0'),
    modelPath: z.string().min(1).default(DEFAULT_MODEL_PATH),
    baudRate: z.coerce
      .number({ error: 'must be a number' })
      .int('must be an integer')
      .min(1200, 'must be at least 1200')
      .max(4_000_000, 'must be at most 4000000')
      .default(115_200),
    /** Longest a capture may take, including waiting for the palm. */
    captureTimeoutMs: z.coerce
      .number({ error: 'must be a number' })
      .int()
      .min(1000)
      .max(600_000)
      .default(30_000),
    /**
     * The scanner's sensor profile: quality limits and the liveness cues it supports
     * (shared/palm/src/capture/sensor-profiles.ts, docs/palm-pipeline.md "Sensor profiles").
     */
    sensor: z
      .enum(SENSOR_NAMES, { error: `must be one of: ${SENSOR_NAMES.join(', ')}` })
      .default(DEFAULT_SENSOR),
    /** Record scanner traffic as JSON lines to this file (diagnostics). */
    recordFile: z.string().min(1).optional(),
  })
  .strict();

export type AgentConfig = z.infer<typeof agentConfigSchema>;
export type ConfigKey = keyof AgentConfig;
export const CONFIG_KEYS = Object.keys(agentConfigSchema.shape) as ConfigKey[];
export type ConfigSource = 'default' | 'file' | 'env' | 'flag';

export class ConfigError extends Error {
  constructor(
    message: string,
    readonly key?: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

export const envNameOf = (key: string) => `PALMID_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;

export interface LoadOptions {
  /** `--config`; falls back to PALMID_AGENT_CONFIG, then ./data/agent.json. */
  file?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Values given as flags (undefined entries are ignored). */
  flags?: Partial<Record<ConfigKey, unknown>>;
}

export interface LoadedConfig {
  config: AgentConfig;
  file: string;
  fileExists: boolean;
  sources: Record<ConfigKey, ConfigSource>;
}

export function configFilePath(options: Pick<LoadOptions, 'file' | 'env'> = {}): {
  path: string;
  explicit: boolean;
} {
  const env = options.env ?? process.env;
  const given = options.file ?? env.PALMID_AGENT_CONFIG;
  return { path: resolve(given ?? DEFAULT_CONFIG_FILE), explicit: given !== undefined };
}

export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`config file ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(
      `config file ${path}: invalid JSON (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ConfigError(`config file ${path}: must hold a JSON object`);
  }
  return data as Record<string, unknown>;
}

export function loadConfig(options: LoadOptions = {}): LoadedConfig {
  const env = options.env ?? process.env;
  const { path, explicit } = configFilePath(options);
  const fileExists = existsSync(path);
  if (explicit && !fileExists && options.file !== undefined) {
    throw new ConfigError(
      `config file ${path} not found (create it with: npm run agent -- config set <key> <value>)`,
    );
  }
  const merged: Record<string, unknown> = {};
  const sources = Object.fromEntries(CONFIG_KEYS.map((k) => [k, 'default'])) as Record<
    ConfigKey,
    ConfigSource
  >;
  const from: Record<string, string> = {};

  if (fileExists) {
    for (const [k, v] of Object.entries(readConfigFile(path))) {
      merged[k] = v;
      if ((CONFIG_KEYS as string[]).includes(k)) sources[k as ConfigKey] = 'file';
      from[k] = `config file ${path}`;
    }
  }
  for (const key of CONFIG_KEYS) {
    const name = envNameOf(key);
    const v = env[name];
    if (v !== undefined && v !== '') {
      merged[key] = v;
      sources[key] = 'env';
      from[key] = `env ${name}`;
    }
  }
  for (const [key, v] of Object.entries(options.flags ?? {})) {
    if (v === undefined) continue;
    merged[key] = v;
    sources[key as ConfigKey] = 'flag';
    from[key] = `flag --${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  }

  const parsed = agentConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === 'unrecognized_keys') {
      const key = issue.keys[0] ?? '?';
      throw new ConfigError(
        `config: unknown key "${key}" in ${from[key] ?? path} (valid keys: ${CONFIG_KEYS.join(', ')})`,
        key,
      );
    }
    const key = String(issue.path[0] ?? '?');
    throw new ConfigError(`config: ${key} (from ${from[key] ?? 'default'}): ${issue.message}`, key);
  }
  return { config: parsed.data, file: path, fileExists, sources };
}

/** Validate one value for `config set`, returning it in its stored (typed) form. */
export function parseConfigValue(key: string, value: string): unknown {
  if (!(CONFIG_KEYS as string[]).includes(key)) {
    throw new ConfigError(`config: unknown key "${key}" (valid keys: ${CONFIG_KEYS.join(', ')})`, key);
  }
  const field = agentConfigSchema.shape[key as ConfigKey];
  const parsed = field.safeParse(value);
  if (!parsed.success)
    throw new ConfigError(`config: ${key}: ${parsed.error.issues[0]?.message ?? 'invalid'}`, key);
  return parsed.data;
}

/** Set (or with `undefined`, remove) one key in the config file; creates the file (mode 0600). */
export function writeConfigKey(path: string, key: ConfigKey, value: unknown): void {
  const current = existsSync(path) ? readConfigFile(path) : {};
  if (value === undefined) delete current[key];
  else current[key] = value;
  mkdirSync(dirname(path), { recursive: true });
  // The file may hold the device token.
  writeFileSync(path, `${JSON.stringify(current, null, 2)}\n`, { mode: 0o600 });
}
