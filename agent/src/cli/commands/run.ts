import { basename } from 'node:path';
import { processCapture } from '@palmid/palm/capture/pipeline';
import type { Command } from 'commander';
import { DeviceKey, deviceKeyPath } from '../../attestation/device-key.ts';
import type { LoadedConfig } from '../../config.ts';
import type { ScannerDriver } from '../../driver/scanner-driver.ts';
import { KioskDaemon, type Outcome } from '../../kiosk/daemon.ts';
import { type Rejection, Uplink } from '../../uplink/uplink.ts';
import { type CliContext, CliError, EXIT } from '../context.ts';

export const AGENT_VERSION = '0.1.0';
const HEARTBEAT_MS = 30_000;

export function requireKioskIdentity(loaded: LoadedConfig): { pvsId: string; deviceToken: string } {
  const { pvsId, deviceToken } = loaded.config;
  if (!pvsId || !deviceToken) {
    throw new CliError(
      `${!pvsId ? 'pvsId' : 'deviceToken'} is not configured: run npm run admin -- pvs create --name <kiosk>, then npm run agent -- config set pvsId <id> and config set deviceToken <token>`,
      EXIT.USAGE,
    );
  }
  return { pvsId, deviceToken };
}

/** Opens the scanner, retrying until it answers or the signal fires (a daemon must outlive a slow plug-in). */
export async function openScannerPatiently(
  ctx: CliContext,
  loaded: LoadedConfig,
  signal: AbortSignal,
  log: (l: string) => void,
): Promise<ScannerDriver | undefined> {
  let delay = 1000;
  while (!signal.aborted) {
    try {
      return await ctx.openScanner(loaded, { reconnect: true });
    } catch (err) {
      log(
        `scanner not reachable (${err instanceof Error ? err.message : String(err)}); retrying in ${delay / 1000} s`,
      );
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 30_000);
    }
  }
  return undefined;
}

/**
 * The device key (beside the config file unless deviceKeyFile says otherwise). A new one is made in
 * memory: `keepDeviceKey` writes it once the server accepted the kiosk's credentials, so a refused token
 * leaves no key file.
 */
export function deviceKeyOf(loaded: LoadedConfig): DeviceKey {
  try {
    return DeviceKey.prepare(deviceKeyPath(loaded.file, loaded.config.deviceKeyFile));
  } catch (err) {
    throw new CliError(err instanceof Error ? err.message : String(err), EXIT.USAGE);
  }
}

/** Writes a new device key after the server accepted the kiosk (see deviceKeyOf); says so once. */
export function keepDeviceKey(key: DeviceKey, log?: (l: string) => void): void {
  try {
    if (key.save()) log?.(`made a new device key at ${key.path} (mode 0600; it never leaves this device)`);
  } catch (err) {
    throw new CliError(err instanceof Error ? err.message : String(err), EXIT.USAGE);
  }
}

export function kioskUplink(
  loaded: LoadedConfig,
  id: { pvsId: string; deviceToken: string },
  driver: Pick<ScannerDriver, 'info'> | undefined,
  log: (l: string) => void,
  mode: 'kiosk' | 'enrol' | 'check' = 'kiosk',
  key?: DeviceKey,
): Uplink {
  const secret = loaded.config.provisioningSecret;
  return new Uplink({
    serverUrl: loaded.config.serverUrl,
    deviceToken: id.deviceToken,
    hello: () => ({
      pvs_id: id.pvsId,
      agent_version: AGENT_VERSION,
      firmware: driver?.info?.firmware ?? 'unknown',
      model: basename(loaded.config.modelPath),
      mode,
      // the kiosk daemon asks for the other hand when identify answers step_up (docs/websocket.md)
      ...(mode === 'kiosk' ? { capabilities: ['step_up' as const] } : {}),
      ...(key
        ? { device_key: { public_key: key.publicKey, ...(secret ? { provisioning_secret: secret } : {}) } }
        : {}),
    }),
    log,
  });
}

/**
 * Starts `uplink` and waits for the server's answer to hello: the kiosk's binding (`vendor_id`), or a
 * CliError when the credentials are refused or the server stays unreachable for `timeoutMs`.
 */
export async function connectKiosk(
  uplink: Uplink,
  serverUrl: string,
  timeoutMs = 15_000,
): Promise<{ pvs_id: string; vendor_id: string | null }> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      uplink.off('connected', onConnected);
      uplink.off('rejected', onRejected);
    };
    const onConnected = (r: { pvs_id: string; vendor_id: string | null }) => {
      done();
      resolve(r);
    };
    const onRejected = (r: Rejection) => {
      done();
      reject(new CliError(`${r.message}; check pvsId and deviceToken (npm run agent -- doctor)`, EXIT.USAGE));
    };
    const timer = setTimeout(() => {
      done();
      reject(
        new CliError(`cannot reach the server at ${serverUrl} within ${timeoutMs / 1000} s`, EXIT.FAILED),
      );
    }, timeoutMs);
    uplink.on('connected', onConnected);
    uplink.on('rejected', onRejected);
    uplink.start();
  });
}

export function registerRun(program: Command, ctx: CliContext): void {
  program
    .command('run')
    .description('the kiosk daemon: serve authentication requests from the server with the scanner')
    .option('--max-attempts <n>', 'captures per request before giving up', (v) => Number(v), 8)
    .option(
      '--timings',
      "log where each context's time went (scan.request queue, captures, transfers, pipeline, identify) as a JSON line",
    )
    .action(async (opts: { maxAttempts: number; timings?: boolean }, cmd: Command) => {
      if (!Number.isInteger(opts.maxAttempts) || opts.maxAttempts < 1)
        throw new CliError('--max-attempts must be a positive integer', EXIT.USAGE);
      const loaded = ctx.config(cmd);
      const id = requireKioskIdentity(loaded);
      const log = (line: string) => ctx.io.err(`[agent ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      const driver = await openScannerPatiently(ctx, loaded, stop.signal, log);
      if (!driver) return;
      const i = driver.info!;
      log(`scanner ${i.model}, firmware ${i.firmware} on ${loaded.config.device}`);
      driver.on('disconnected', (err: Error) => log(`scanner disconnected: ${err.message}`));
      driver.on('reconnected', () => log('scanner reconnected'));
      const key = deviceKeyOf(loaded);
      const uplink = kioskUplink(loaded, id, driver, log, 'kiosk', key);
      uplink.on('connected', (r: { device_key?: string }) => {
        log(`connected to ${loaded.config.serverUrl} as kiosk ${id.pvsId}`);
        keepDeviceKey(key, log);
        if (r.device_key !== 'bound')
          log(
            'the server has no key registered for this device: captures will be refused (set provisioningSecret from admin pvs create / pvs rekey)',
          );
      });
      uplink.on('disconnected', () => log('server link lost; reconnecting'));
      uplink.on('refused', (e: { message: string }) => log(`server refused the kiosk: ${e.message}`));
      uplink.on('rejected', (r: Rejection) => {
        log(
          `stopping: ${r.message}. Check pvsId and deviceToken (npm run agent -- doctor); a new token comes from npm run admin -- pvs create`,
        );
        // Exit 2 (configuration): systemd does not restart the service into the same refusal.
        ctx.exitCode = EXIT.USAGE;
        stop.abort();
      });
      const sensor = loaded.config.sensor;
      log(`sensor profile ${sensor}`);
      const daemon = new KioskDaemon(driver, (frame) => processCapture(frame, { sensor }), uplink, {
        maxAttempts: opts.maxAttempts,
        attest: (authId, nonce, sample) =>
          key.attest({
            purpose: 'identify',
            deviceId: id.pvsId,
            subject: authId,
            nonce,
            template: sample.template,
            hand: sample.hand,
            quality: sample.quality,
            liveness: sample.liveness,
          }),
        display: (line) => ctx.io.out(`[kiosk] ${line}\n`),
      });
      daemon.on('outcome', (o: Outcome) => {
        log(
          `context ${o.auth_id}: ${o.status}${o.reason ? ` (${o.reason})` : ''} after ${o.attempts} capture(s)`,
        );
        if (opts.timings && o.timings)
          log(`timings ${JSON.stringify({ auth_id: o.auth_id, steps: o.timings })}`);
      });
      daemon.on('scanner-error', (err: Error) => log(`scanner error: ${err.message}`));
      const started = Date.now();
      const beat = setInterval(
        () => uplink.event('heartbeat', { uptime_s: Math.floor((Date.now() - started) / 1000) }),
        HEARTBEAT_MS,
      );
      uplink.start();
      log('kiosk ready (Ctrl-C to stop)');
      await new Promise<void>((resolve) =>
        stop.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      log('stopping');
      clearInterval(beat);
      await uplink.stop();
      await driver.close();
    });
}
