import { SENSOR_NAMES, SENSOR_PROFILES, validationTag } from '@palmid/palm/capture/sensor-profiles';
import type { Command } from 'commander';
import {
  CONFIG_KEYS,
  ConfigError,
  type ConfigKey,
  configFilePath,
  envNameOf,
  parseConfigValue,
  writeConfigKey,
} from '../../config.ts';
import type { CliContext } from '../context.ts';

/** `agent config --help`: the sensor profiles and what each one's liveness check detects. */
export function sensorProfilesHelp(): string {
  const lines = ['', 'Sensor profiles (agent config set sensor <profile>; docs/palm-pipeline.md):'];
  for (const n of SENSOR_NAMES) {
    const p = SENSOR_PROFILES[n];
    lines.push(
      `  ${n}: ${p.summary}`,
      `    validated: ${validationTag(p.validation)}: ${p.validation.evidence}`,
      `    liveness cues: ${p.stages.liveness.cues.join(', ')}`,
      `    template coding: ${p.stages.code.coding} (the server's PALMID_TEMPLATE_CODING must match)`,
      `    detects: ${p.detects}`,
    );
  }
  return lines.join('\n');
}

const SECRET_KEYS: ConfigKey[] = ['deviceToken', 'provisioningSecret'];

function redact(key: ConfigKey, value: unknown, reveal: boolean): unknown {
  if (value === undefined || reveal || !SECRET_KEYS.includes(key)) return value;
  const s = String(value);
  return s.length > 8 ? `${s.slice(0, 4)}…(hidden)` : '(hidden)';
}

function assertKey(key: string): ConfigKey {
  if (!(CONFIG_KEYS as string[]).includes(key)) {
    throw new ConfigError(`config: unknown key "${key}" (valid keys: ${CONFIG_KEYS.join(', ')})`, key);
  }
  return key as ConfigKey;
}

export function registerConfig(program: Command, ctx: CliContext): void {
  const config = program
    .command('config')
    .description('show or change the agent configuration (defaults → file → PALMID_* env → flags)')
    .addHelpText('after', sensorProfilesHelp());

  config
    .command('show')
    .description('print the effective configuration and where each value comes from')
    .option('--json', 'machine-readable output')
    .option('--reveal', 'show secrets (device token, provisioning secret) in full')
    .action((opts: { json?: boolean; reveal?: boolean }, cmd: Command) => {
      const loaded = ctx.config(cmd);
      const reveal = opts.reveal ?? false;
      if (opts.json) {
        const values = Object.fromEntries(CONFIG_KEYS.map((k) => [k, redact(k, loaded.config[k], reveal)]));
        ctx.io.out(
          `${JSON.stringify({ file: loaded.file, fileExists: loaded.fileExists, config: values, sources: loaded.sources }, null, 2)}\n`,
        );
        return;
      }
      ctx.io.out(`config file: ${loaded.file}${loaded.fileExists ? '' : ' (not found; using defaults)'}\n`);
      const width = Math.max(...CONFIG_KEYS.map((k) => k.length));
      for (const key of CONFIG_KEYS) {
        const value = redact(key, loaded.config[key], reveal);
        const shown = value === undefined ? '(not set)' : String(value);
        ctx.io.out(`  ${key.padEnd(width)}  ${shown}  [${loaded.sources[key]}; env ${envNameOf(key)}]\n`);
      }
    });

  config
    .command('set')
    .description('set a key in the config file (validated; the file is created with mode 0600)')
    .argument('<key>', `one of: ${CONFIG_KEYS.join(', ')}`)
    .argument('<value>')
    .action((key: string, value: string, _opts: unknown, cmd: Command) => {
      const k = assertKey(key);
      const typed = parseConfigValue(k, value);
      const { path } = configFilePath({
        file: cmd.optsWithGlobals().config as string | undefined,
        env: ctx.io.env,
      });
      writeConfigKey(path, k, typed);
      ctx.io.out(`${k} = ${String(redact(k, typed, false))}  (saved to ${path})\n`);
    });

  config
    .command('unset')
    .description('remove a key from the config file (its default applies again)')
    .argument('<key>')
    .action((key: string, _opts: unknown, cmd: Command) => {
      const k = assertKey(key);
      const { path } = configFilePath({
        file: cmd.optsWithGlobals().config as string | undefined,
        env: ctx.io.env,
      });
      writeConfigKey(path, k, undefined);
      ctx.io.out(`${k} removed from ${path}\n`);
    });

  config
    .command('path')
    .description('print the config file path in use')
    .action((_opts: unknown, cmd: Command) => {
      ctx.io.out(
        `${configFilePath({ file: cmd.optsWithGlobals().config as string | undefined, env: ctx.io.env }).path}\n`,
      );
    });
}
