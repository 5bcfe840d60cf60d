import type { Command } from 'commander';
import type { LoadedConfig } from '../../config.ts';
import { type CliContext, EXIT } from '../context.ts';
import { type CheckResult, checkClock, checkKioskLogin, checkModel, checkServer } from '../doctor-checks.ts';

const MARK: Record<CheckResult['status'], string> = { ok: '✔', warn: '!', fail: '✘', skip: '-' };

async function checkDevice(ctx: CliContext, loaded: LoadedConfig, capture: boolean): Promise<CheckResult[]> {
  const device = loaded.config.device;
  let driver: Awaited<ReturnType<CliContext['openScanner']>>;
  try {
    driver = await ctx.openScanner(loaded);
  } catch (err) {
    return [
      {
        name: 'device',
        status: 'fail',
        detail: `${device}: ${err instanceof Error ? err.message : String(err)}`,
        hint: 'list scanners with: npm run agent -- devices; or start the simulator: npm run sim -- --tcp 7070',
      },
    ];
  }
  const results: CheckResult[] = [];
  try {
    const i = driver.info!;
    results.push({
      name: 'device',
      status: 'ok',
      detail: `${device}: ${i.model}, S/N ${i.serial}, sensor ${i.width}×${i.height}×${i.bitsPerPixel} bit`,
    });
    results.push({
      name: 'firmware',
      status: 'ok',
      detail: `version ${i.firmware}, wire protocol v${i.protocol}`,
    });
    if (capture) {
      try {
        const img = await driver.capture({ timeoutMs: Math.min(loaded.config.captureTimeoutMs, 15_000) });
        let sum = 0;
        for (const v of img.data) sum += v;
        results.push({
          name: 'capture',
          status: 'ok',
          detail: `${img.width}×${img.height} in ${img.durationMs} ms, mean level ${(sum / img.data.length).toFixed(0)}`,
        });
      } catch (err) {
        results.push({
          name: 'capture',
          status: 'fail',
          detail: err instanceof Error ? err.message : String(err),
          hint: 'hold a palm over the sensor during the test capture',
        });
      }
    }
    const s = driver.stats;
    if (s && s.badCrc + s.badHeaders + s.timeouts > 0) {
      results.push({
        name: 'link',
        status: 'warn',
        detail: `${s.badCrc} bad CRC, ${s.badHeaders} bad headers, ${s.timeouts} timeouts, ${s.droppedBytes} bytes dropped`,
        hint: 'check the USB cable and keep it away from power lines',
      });
    }
  } finally {
    await driver.close();
  }
  return results;
}

export function registerDoctor(program: Command, ctx: CliContext): void {
  program
    .command('doctor')
    .description(
      'check the scanner, firmware, model file, server link, clock and the kiosk credentials (against the server); exit 1 if any check fails',
    )
    .option('--capture', 'also take one test capture')
    .option('--json', 'machine-readable output')
    .option('--timeout <ms>', 'server request timeout', (v) => Number(v), 3000)
    .action(async (opts: { capture?: boolean; json?: boolean; timeout: number }, cmd: Command) => {
      const loaded = ctx.config(cmd);
      const { config } = loaded;
      const results: CheckResult[] = [
        {
          name: 'config',
          status: 'ok',
          detail: loaded.fileExists ? loaded.file : `${loaded.file} not found; defaults, env and flags only`,
        },
      ];
      const [device, model, server] = await Promise.all([
        checkDevice(ctx, loaded, opts.capture ?? false),
        checkModel(config.modelPath),
        checkServer(config.serverUrl, opts.timeout),
      ]);
      // The kiosk's credentials, tried against the server the way `agent run` logs in.
      const login = await checkKioskLogin(config.serverUrl, config, {
        timeoutMs: opts.timeout,
        serverReachable: server.result.status === 'ok',
      });
      results.push(...device, model, server.result, checkClock(server), ...login);

      const failed = results.filter((r) => r.status === 'fail');
      if (opts.json) {
        ctx.io.out(`${JSON.stringify({ ok: failed.length === 0, checks: results }, null, 2)}\n`);
      } else {
        ctx.io.out('palmid agent doctor\n');
        const width = Math.max(...results.map((r) => r.name.length));
        for (const r of results) {
          ctx.io.out(`  ${MARK[r.status]} ${r.name.padEnd(width)}  ${r.detail}\n`);
          if (r.hint && r.status !== 'ok') ctx.io.out(`    ${''.padEnd(width)}  → ${r.hint}\n`);
        }
        ctx.io.out(
          failed.length === 0
            ? 'all checks passed\n'
            : `${failed.length} check${failed.length > 1 ? 's' : ''} failed: ${failed.map((r) => r.name).join(', ')}\n`,
        );
      }
      if (failed.length > 0) ctx.exitCode = EXIT.FAILED;
    });
}
