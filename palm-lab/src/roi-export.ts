import { mkdir } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { AppError } from '@palmid/contracts/errors';
import { readImage } from '@palmid/palm/capture/image-io';
import { ROI_SIZE } from '@palmid/palm/capture/model-graph';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { type SensorName, sensorArg, sensorHelp } from '@palmid/palm/capture/sensor-profiles';
import { Command } from 'commander';
import sharp from 'sharp';
import { listDataset } from './eval/dataset.ts';
import { progressBar } from './progress.ts';

export interface RoiExportReport {
  images: number;
  written: number;
  failed: number;
  /** reason → count (of the images with no ROI written) */
  failure_reasons: Record<string, number>;
}

/** 8-bit PNG of a ROI (grey levels clamped to 0–255). */
async function writeRoiPng(path: string, roi: Float32Array): Promise<void> {
  const px = new Uint8Array(roi.length);
  for (let i = 0; i < roi.length; i++) px[i] = Math.max(0, Math.min(255, Math.round(roi[i]!)));
  await mkdir(dirname(path), { recursive: true });
  await sharp(px, { raw: { width: ROI_SIZE, height: ROI_SIZE, channels: 1 } })
    .toColourspace('b-w')
    .png()
    .toFile(path);
}

/**
 * The kiosk's capture path (hand detection, ROI, quality gates and liveness under a sensor
 * profile) over `<dir>/<subject>/<image>`: each capture's 128 × 128 ROI goes to the same layout
 * under `out` as PNG. Captures the kiosk refuses are not written unless `all` is set (then every
 * capture whose hand geometry yields a ROI is written); each refusal goes to `onFailure`.
 */
export async function exportRois(
  dir: string,
  out: string,
  options: {
    sensor?: SensorName;
    all?: boolean;
    onFailure?: (file: string, reason: string) => void;
    onProgress?: (done: number, total: number) => void;
  } = {},
): Promise<RoiExportReport> {
  const dataset = await listDataset(dir);
  const files = dataset.subjects.flatMap((s) => s.files);
  const report: RoiExportReport = { images: files.length, written: 0, failed: 0, failure_reasons: {} };
  let done = 0;
  for (const file of files) {
    let reason: string | null = null;
    let roi: Float32Array | undefined;
    try {
      const r = await processCapture(await readImage(file), {
        keepRoi: true,
        ...(options.sensor ? { sensor: options.sensor } : {}),
      });
      roi = r.roi;
      if (!r.ok) reason = r.reason;
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      reason = String(err.details.reason ?? 'unreadable');
    }
    const write = roi !== undefined && (reason === null || options.all);
    if (write && roi) {
      const rel = relative(dir, file).replace(/\.[^./\\]+$/, '');
      await writeRoiPng(join(out, `${rel}.png`), roi);
      report.written++;
    }
    if (reason !== null) {
      if (!write) {
        report.failed++;
        report.failure_reasons[reason] = (report.failure_reasons[reason] ?? 0) + 1;
      }
      options.onFailure?.(file, write ? `${reason} (written: --all)` : reason);
    }
    options.onProgress?.(++done, files.length);
  }
  return report;
}

/** `palm roi <dir> --out <outdir> [--sensor P] [--all]` */
export function roiCommand(): Command {
  return new Command('roi')
    .description(
      'write the 128 × 128 palm ROI of every whole-hand image of <dir>/<subject>/<image> as PNG in ' +
        'the same layout under --out (refused images are listed on stderr with their reason)',
    )
    .argument('<dir>', 'dataset directory')
    .requiredOption('--out <outdir>', 'output directory')
    .option('--sensor <profile>', `sensor profile (default simulator):\n${sensorHelp()}`, sensorArg)
    .option('--all', 'also write the ROI of captures refused by a quality or liveness gate')
    .action(async (dir: string, o: { out: string; sensor?: SensorName; all?: boolean }) => {
      let bar: ReturnType<typeof progressBar> | null = null;
      const report = await exportRois(dir, o.out, {
        ...(o.sensor ? { sensor: o.sensor } : {}),
        ...(o.all ? { all: true } : {}),
        onFailure: (file, reason) => console.error(`${file}: ${reason}`),
        onProgress: (done, total) => {
          bar ??= progressBar(total, 'cropping');
          bar.update(done);
        },
      });
      (bar as ReturnType<typeof progressBar> | null)?.stop();
      console.log(JSON.stringify(report));
    });
}
