import type { Command } from 'commander';
import { ConfigError, type ConfigKey, type LoadedConfig, loadConfig } from '../config.ts';
import { ScannerDriver } from '../driver/scanner-driver.ts';
import { createTransport } from '../transport/index.ts';

/** Where a command writes, and the environment it reads: swapped for buffers in tests. */
export interface CliIO {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  /** True when stderr is a terminal (progress bars). */
  interactive: boolean;
}

export const EXIT = {
  OK: 0,
  /** A check or operation failed (device, server, capture…). */
  FAILED: 1,
  /** Bad usage or configuration. */
  USAGE: 2,
} as const;

/** An error the CLI reports as one line, with its exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.FAILED,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface CliContext {
  io: CliIO;
  /** Exit code once the command returns (commands set FAILED without throwing, e.g. doctor). */
  exitCode: number;
  /** Config for this invocation: defaults → file → env → global flags. */
  config(command: Command): LoadedConfig;
  /** Open the configured scanner; the caller closes it. */
  openScanner(
    loaded: LoadedConfig,
    options?: { timeoutMs?: number; reconnect?: boolean },
  ): Promise<ScannerDriver>;
}

/** Global flags that override config keys. */
export const FLAG_KEYS: Array<[flag: string, key: ConfigKey]> = [
  ['device', 'device'],
  ['serverUrl', 'serverUrl'],
  ['modelPath', 'modelPath'],
  ['baudRate', 'baudRate'],
  ['record', 'recordFile'],
];

export function createContext(io: CliIO): CliContext {
  return {
    io,
    exitCode: EXIT.OK,
    config(command) {
      const opts = command.optsWithGlobals() as Record<string, unknown>;
      const flags: Partial<Record<ConfigKey, unknown>> = {};
      for (const [flag, key] of FLAG_KEYS) if (opts[flag] !== undefined) flags[key] = opts[flag];
      return loadConfig({ file: opts.config as string | undefined, env: io.env, flags });
    },
    async openScanner(loaded, options = {}) {
      const { config } = loaded;
      let transport: Awaited<ReturnType<typeof createTransport>>;
      try {
        transport = await createTransport(config.device, {
          baudRate: config.baudRate,
          ...(config.recordFile ? { recordFile: config.recordFile } : {}),
        });
      } catch (err) {
        throw new ConfigError(
          `config: device: ${err instanceof Error ? err.message : String(err)}`,
          'device',
        );
      }
      const driver = new ScannerDriver(transport, {
        reconnect: options.reconnect ?? false,
        captureTimeoutMs: config.captureTimeoutMs,
        ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      });
      try {
        await driver.connect();
      } catch (err) {
        await driver.close();
        throw err;
      }
      return driver;
    },
  };
}
