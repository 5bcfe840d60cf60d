import { constants } from 'node:fs';
import { access, stat, writeFile } from 'node:fs/promises';
import { dirname, extname, resolve } from 'node:path';
import { processCapture } from '@palmid/palm/capture/pipeline';
import type { Command } from 'commander';
import type { CaptureProgress } from '../../driver/scanner-driver.ts';
import { type CliContext, CliError, EXIT } from '../context.ts';

async function savePng(
  path: string,
  img: { width: number; height: number; data: Uint8Array },
): Promise<void> {
  const { default: sharp } = await import('sharp');
  await sharp(Buffer.from(img.data), { raw: { width: img.width, height: img.height, channels: 1 } })
    .toColourspace('b-w')
    .png()
    .toFile(path);
}

/** Why `path` cannot be written, checked before the scanner is touched; undefined when it can. */
export async function unwritable(path: string): Promise<string | undefined> {
  const dir = dirname(path);
  const dirStat = await stat(dir).catch(() => undefined);
  if (!dirStat) return `directory ${dir} does not exist`;
  if (!dirStat.isDirectory()) return `${dir} is not a directory`;
  const fileStat = await stat(path).catch(() => undefined);
  if (fileStat?.isDirectory()) return `${path} is a directory`;
  try {
    await access(fileStat ? path : dir, constants.W_OK);
  } catch {
    return fileStat ? `${path} is not writable` : `directory ${dir} is not writable`;
  }
  return undefined;
}

/** Progress on stderr: a bar on a terminal, a few plain lines otherwise. */
async function progressReporter(ctx: CliContext, enabled: boolean) {
  let phase: CaptureProgress['phase'] | undefined;
  let bar: { start(total: number, v: number): void; update(v: number): void; stop(): void } | undefined;
  if (enabled && ctx.io.interactive) {
    const { default: cliProgress } = await import('cli-progress');
    bar = new cliProgress.SingleBar(
      {
        format: 'reading image [{bar}] {percentage}% | {value}/{total} bytes',
        stream: process.stderr,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
  }
  let started = false;
  return {
    update(p: CaptureProgress) {
      if (p.phase !== phase) {
        phase = p.phase;
        if (p.phase === 'waiting-palm') ctx.io.err('waiting for a palm over the sensor…\n');
        if (p.phase === 'capturing') ctx.io.err('palm detected, capturing…\n');
        if (p.phase === 'transferring' && !bar) ctx.io.err(`reading image (${p.total} bytes)…\n`);
      }
      if (bar && p.phase === 'transferring') {
        if (!started) bar.start(p.total, p.done);
        else bar.update(p.done);
        started = true;
      }
    },
    stop() {
      if (bar && started) bar.stop();
    },
  };
}

export function registerCapture(program: Command, ctx: CliContext): void {
  program
    .command('capture')
    .description('take one capture from the scanner and save it as an 8-bit grayscale image')
    .requiredOption('-o, --out <file>', 'output image (.png; .raw writes the bare pixels)')
    .option('--timeout <s>', 'seconds to wait for a palm and the capture', (v) => Number(v))
    .option('--no-progress', 'no progress bar')
    .option('--json', 'print the result as JSON')
    .option(
      '--check',
      "also run the palm pipeline under the configured sensor profile (config key 'sensor') and report its verdict",
    )
    .action(
      async (
        opts: { out: string; timeout?: number; progress: boolean; json?: boolean; check?: boolean },
        cmd: Command,
      ) => {
        if (opts.timeout !== undefined && !(opts.timeout > 0))
          throw new CliError('--timeout must be a positive number of seconds', EXIT.USAGE);
        const ext = extname(opts.out).toLowerCase();
        if (ext !== '.png' && ext !== '.raw')
          throw new CliError(`--out must end in .png or .raw (got "${opts.out}")`, EXIT.USAGE);
        const out = resolve(opts.out);
        const problem = await unwritable(out);
        if (problem) throw new CliError(`--out ${opts.out}: ${problem}`, EXIT.USAGE);
        const loaded = ctx.config(cmd);
        const driver = await ctx.openScanner(loaded);
        const reporter = await progressReporter(ctx, opts.progress);
        const abort = new AbortController();
        const onSigint = () => abort.abort();
        process.once('SIGINT', onSigint);
        try {
          const i = driver.info!;
          ctx.io.err(`scanner: ${i.model}, firmware ${i.firmware} (${loaded.config.device})\n`);
          const img = await driver.capture({
            onProgress: (p) => reporter.update(p),
            signal: abort.signal,
            ...(opts.timeout ? { timeoutMs: opts.timeout * 1000 } : {}),
          });
          reporter.stop();
          try {
            if (ext === '.raw') await writeFile(out, img.data);
            else await savePng(out, img);
          } catch (err) {
            // The image encoder's own message can run to many lines: the first says what went wrong.
            const first = (err instanceof Error ? err.message : String(err)).split('\n')[0];
            throw new CliError(`cannot write ${out}: ${first}`, EXIT.FAILED);
          }
          let check: Record<string, unknown> | undefined;
          if (opts.check) {
            const sensor = loaded.config.sensor;
            const r = await processCapture(img, { sensor });
            check = r.ok
              ? { sensor, ok: true, hand: r.hand, quality: r.quality, liveness: r.liveness }
              : { sensor, ok: false, reason: r.reason, message: r.message };
          }
          if (opts.json) {
            ctx.io.out(
              `${JSON.stringify({ file: out, width: img.width, height: img.height, captureId: img.captureId, durationMs: img.durationMs, ...(check ? { check } : {}) })}\n`,
            );
          } else {
            ctx.io.out(
              `saved ${out} (${img.width}×${img.height}, 8-bit gray, ${(img.durationMs / 1000).toFixed(1)} s)\n`,
            );
            if (check)
              ctx.io.out(
                check.ok
                  ? `palm pipeline (sensor ${check.sensor}): ok, ${check.hand === 'unknown' ? 'hand side undecided' : `${check.hand} hand`}, quality ${check.quality}, liveness ${check.liveness}\n`
                  : `palm pipeline (sensor ${check.sensor}): refused, ${check.message} (${check.reason})\n`,
              );
          }
        } finally {
          reporter.stop();
          process.off('SIGINT', onSigint);
          await driver.close();
        }
      },
    );
}
