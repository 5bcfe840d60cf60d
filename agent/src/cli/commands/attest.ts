import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { DeviceKey, deviceKeyPath, keyFileState } from '../../attestation/device-key.ts';
import { helloOnce } from '../../attestation/hello.ts';
import type { LoadedConfig } from '../../config.ts';
import { type CliContext, CliError, EXIT } from '../context.ts';
import type { CheckResult } from '../doctor-checks.ts';
import { AGENT_VERSION, deviceKeyOf, keepDeviceKey, requireKioskIdentity } from './run.ts';

function unit(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1)
    throw new CliError(`${flag} must be a number from 0 to 1`, EXIT.USAGE);
  return n;
}

/** A template given as a file (the binary of `npm run palm -- extract -o`, or its base64 text). */
function readTemplate(path: string): Uint8Array {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new CliError(`--template ${path}: ${err instanceof Error ? err.message : String(err)}`, EXIT.USAGE);
  }
  const text = bytes.toString('latin1').trim();
  const b64 = /^[A-Za-z0-9+/_-]+={0,2}$/.test(text) ? Buffer.from(text, 'base64') : bytes;
  if (b64.length === 0 || b64.length > 1024)
    throw new CliError(`--template ${path}: a template is 1–1024 bytes`, EXIT.USAGE);
  return new Uint8Array(b64);
}

/** The `device key` check of `agent doctor`: the key file (present, mode 0600) and whether the server accepts it. */
export async function checkDeviceKey(loaded: LoadedConfig, timeoutMs: number): Promise<CheckResult> {
  const path = deviceKeyPath(loaded.file, loaded.config.deviceKeyFile);
  const state = keyFileState(path);
  const { pvsId, deviceToken } = loaded.config;
  if (!state.exists)
    return {
      name: 'device key',
      // before the device is provisioned a missing key is expected (agent register or run makes it)
      status: pvsId && deviceToken ? 'fail' : 'warn',
      detail: `no device key at ${path}`,
      hint: 'make and register it: npm run agent -- register (needs provisioningSecret from admin pvs create)',
    };
  let key: DeviceKey;
  try {
    key = DeviceKey.load(path);
  } catch (err) {
    return {
      name: 'device key',
      status: 'fail',
      detail: err instanceof Error ? err.message : String(err),
      hint: `chmod 600 ${path}, or if it is damaged: delete it, then admin pvs rekey and agent register`,
    };
  }
  if (!pvsId || !deviceToken)
    return {
      name: 'device key',
      status: 'warn',
      detail: `${path} (mode 600); not checked with the server: pvsId or deviceToken not configured`,
    };
  const answer = await helloOnce(
    loaded.config.serverUrl,
    deviceToken,
    {
      pvs_id: pvsId,
      agent_version: AGENT_VERSION,
      firmware: 'doctor',
      model: 'doctor',
      mode: 'check',
      device_key: { public_key: key.publicKey },
    },
    timeoutMs,
  );
  if (answer.ok && answer.result.device_key === 'bound')
    return { name: 'device key', status: 'ok', detail: `${path} (mode 600), registered with the server` };
  if (answer.ok)
    return {
      name: 'device key',
      status: 'fail',
      detail: 'the server has no key registered for this device: its captures are refused',
      hint: 'npm run agent -- config set provisioningSecret <secret from admin pvs create|rekey>, then npm run agent -- register',
    };
  if (answer.reason === 'device_key_mismatch')
    return {
      name: 'device key',
      status: 'fail',
      detail: 'the server has another key registered for this device',
      hint: 'npm run admin -- pvs rekey <pvs_id>, set the new provisioningSecret, then npm run agent -- register',
    };
  return {
    name: 'device key',
    status: 'fail',
    detail: `the server did not accept the device (${answer.code}: ${answer.message})`,
    hint: 'check deviceToken and pvsId (npm run agent -- config list)',
  };
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function registerAttest(program: Command, ctx: CliContext): void {
  program
    .command('register')
    .description(
      "register this device's capture key with the server (makes the key on first use; needs provisioningSecret from admin pvs create or pvs rekey)",
    )
    .option('--json', 'print the result as JSON')
    .option('--timeout <ms>', 'server request timeout', (v) => Number(v), 5000)
    .action(async (opts: { json?: boolean; timeout: number }, cmd: Command) => {
      const loaded = ctx.config(cmd);
      const id = requireKioskIdentity(loaded);
      const key = deviceKeyOf(loaded);
      const secret = loaded.config.provisioningSecret;
      const answer = await helloOnce(
        loaded.config.serverUrl,
        id.deviceToken,
        {
          pvs_id: id.pvsId,
          agent_version: AGENT_VERSION,
          firmware: 'register',
          model: 'register',
          mode: 'check',
          device_key: { public_key: key.publicKey, ...(secret ? { provisioning_secret: secret } : {}) },
        },
        opts.timeout,
      );
      if (!answer.ok)
        throw new CliError(
          `the server refused the key: ${answer.message}${answer.reason ? ` (${answer.reason})` : ''}`,
          EXIT.FAILED,
        );
      keepDeviceKey(key, (l) => ctx.io.err(`${l}\n`));
      const bound = answer.result.device_key === 'bound';
      const out = {
        pvs_id: id.pvsId,
        device_key: answer.result.device_key,
        public_key: key.publicKey,
        key_file: key.path,
      };
      if (opts.json) ctx.io.out(`${JSON.stringify(out)}\n`);
      else
        ctx.io.out(
          bound
            ? `device key registered for ${id.pvsId}\n  public key ${key.publicKey}\n  private key ${key.path} (never leaves this device)\n`
            : `not registered: set provisioningSecret (npm run agent -- config set provisioningSecret <secret>) and run register again\n`,
        );
      if (!bound) ctx.exitCode = EXIT.FAILED;
    });

  program
    .command('attest')
    .description(
      'sign one capture with this device key for POST /api/v1/auth or, with --for register, for mpc/users (integrators running their own capture host); prints the palm JSON',
    )
    .requiredOption(
      '--template <file>',
      'template file (binary from npm run palm -- extract -o, or base64 text)',
    )
    .requiredOption('--liveness <0..1>', 'liveness score of the capture (mandatory)')
    .option('--quality <0..1>', 'quality score of the capture', '1')
    .option('--hand <left|right>', 'hand captured')
    .option(
      '--for <auth|register>',
      'auth: a palm for POST /api/v1/auth; register: a palm for POST /api/v1/mpc/users/create or update',
      'auth',
    )
    .option(
      '--subject <uuid>',
      'register: the capture id shared by all palms of one request (sign them one after another with it)',
    )
    .action(
      async (
        opts: {
          template: string;
          liveness: string;
          quality: string;
          hand?: string;
          for: string;
          subject?: string;
        },
        cmd: Command,
      ) => {
        if (opts.hand !== undefined && opts.hand !== 'left' && opts.hand !== 'right')
          throw new CliError('--hand must be left or right', EXIT.USAGE);
        if (opts.for !== 'auth' && opts.for !== 'register')
          throw new CliError('--for must be auth or register', EXIT.USAGE);
        if (opts.subject !== undefined && (opts.for !== 'register' || !UUID_RE.test(opts.subject)))
          throw new CliError('--subject must be a UUID, and only with --for register', EXIT.USAGE);
        const liveness = unit('--liveness', opts.liveness);
        const quality = unit('--quality', opts.quality);
        const template = readTemplate(opts.template);
        const loaded = ctx.config(cmd);
        const pvsId = loaded.config.pvsId;
        if (!pvsId)
          throw new CliError(
            'pvsId is not configured: npm run admin -- pvs create --name <host> --vendor <vendor_id>, then npm run agent -- config set pvsId <id>',
            EXIT.USAGE,
          );
        const key = deviceKeyOf(loaded);
        keepDeviceKey(key, (l) => ctx.io.err(`${l}\n`)); // it signs now, so it must be the one kept
        const hand = opts.hand as 'left' | 'right' | undefined;
        const attestation = key.attest({
          purpose: opts.for === 'register' ? 'register' : 'direct',
          deviceId: pvsId,
          subject: opts.subject ?? randomUUID(),
          template,
          hand,
          quality,
          liveness,
        });
        const palm = {
          template: Buffer.from(template).toString('base64'),
          ...(hand ? { hand } : {}),
          quality,
          liveness,
          attestation,
        };
        ctx.io.out(`${JSON.stringify(palm)}\n`);
      },
    );
}
