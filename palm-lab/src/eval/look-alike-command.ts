import { type SensorName, sensorArg, sensorHelp } from '@palmid/palm/capture/sensor-profiles';
import { PACKED_WORDS, packedDistance, packTemplate } from '@palmid/palm/match';
import { decodeTemplate } from '@palmid/palm/template';
import { Command, InvalidArgumentError } from 'commander';
import { progressBar } from '../progress.ts';
import { baselineDistance } from './baseline.ts';
import { listDataset } from './dataset.ts';
import { baselineExtract, palmExtract } from './extract.ts';
import { type LookAlikeReport, lookAlikeIdentities } from './look-alike.ts';

interface LookAlikeCliOptions {
  roi?: boolean;
  baseline?: boolean;
  sensor?: SensorName;
  top: number;
  flagZ: number;
  json?: boolean;
}

function topArg(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 100_000)
    throw new InvalidArgumentError('--top must be an integer in [1, 100000]');
  return n;
}

function zArg(v: string): number {
  const z = Number(v);
  if (!Number.isFinite(z) || z <= 0 || z > 1000)
    throw new InvalidArgumentError('--flag-z must be a number in (0, 1000]');
  return z;
}

const fixed = (x: number, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : '—');

function formatReport(dir: string, r: LookAlikeReport, failed: number, matcher: string): string {
  const lines = [
    `palm look-alike ${dir} (${matcher})`,
    `  ${r.identities} identities, ${r.images} images enrolled${failed ? ` (${failed} refused, left out)` : ''}`,
    r.genuine
      ? `  genuine pairs ${r.genuine_pairs}: median ${fixed(r.genuine.median)}, p95 ${fixed(r.genuine.p95)}, max ${fixed(r.genuine.max)}`
      : '  no genuine pairs (no identity has two images)',
    `  impostor pairs ${r.impostor_pairs}: closest ${fixed(r.impostor.min)}, 1e-4 quantile ${fixed(r.impostor.q1e4)}, ` +
      `1e-3 quantile ${fixed(r.impostor.q1e3)}, median ${fixed(r.impostor.median)}`,
    `  identity pairs ${r.identity_pairs}: median of their median cross distances ${fixed(r.identity_pair_medians.median)} ` +
      `(scaled MAD ${fixed(r.identity_pair_medians.mad)})`,
    `  flagged (median cross distance ${r.flag_z} robust standard deviations or more below the median of all pairs): ${r.flagged}`,
    '',
    '  a / b                     cross  min    median max    impostors ≤ median  genuine ≤ median  robust z  flag',
  ];
  for (const p of r.closest) {
    lines.push(
      `  ${`${p.a} / ${p.b}`.padEnd(24)} ${String(p.pairs).padStart(5)}  ${fixed(p.min)}  ${fixed(p.median)}  ${fixed(p.max)}  ` +
        `${`${p.impostors_closer} (${Number.isFinite(p.impostor_quantile) ? `${(p.impostor_quantile * 100).toFixed(3)} %` : '—'})`.padEnd(19)} ` +
        `${(p.genuine_quantile === null ? '—' : `${(p.genuine_quantile * 100).toFixed(1)} %`).padEnd(17)} ${fixed(p.robust_z, 1).padStart(8)}  ${p.looks_genuine ? 'LOOKS GENUINE' : ''}`,
    );
  }
  const flagged = r.closest.filter((p) => p.looks_genuine);
  if (flagged.length > 0)
    lines.push(
      '',
      `  to evaluate the flagged pairs as one person each: palm eval ${dir} --same ${flagged.map((p) => `${p.a}=${p.b}`).join(',')}`,
    );
  return `${lines.join('\n')}\n`;
}

/**
 * `palm look-alike <dir>`: the pairs of identities of a `<subject>/<image>` tree whose cross
 * distances look genuine (a subject filed twice under two labels); docs/palm-pipeline.md,
 * "Look-alike identities". Same extraction as `palm eval`, one template per image scored with the plain
 * distance (no rotation variants, unlike `eval --roi`'s default).
 */
export function lookAlikeCommand(): Command {
  return new Command('look-alike')
    .description(
      'dataset curation: the pairs of identities whose cross-pair distances look genuine (one person ' +
        'under two labels), by the distribution of all their cross pairs against the genuine and impostor ones',
    )
    .argument('<dir>', 'dataset directory, <dir>/<subject>/<image> as for eval')
    .option('--roi', 'images are already-cropped palm ROIs (any size)')
    .option(
      '--baseline',
      'with --roi: code and match with the CompCode baseline instead of palmid (an independent matcher)',
    )
    .option(
      '--sensor <profile>',
      `whole frames: the capture's sensor profile (default simulator):\n${sensorHelp()}`,
      sensorArg,
    )
    .option('--top <n>', 'identity pairs to list, closest first', topArg, 10)
    .option(
      '--flag-z <z>',
      'flag a pair whose median cross distance lies z robust standard deviations below the median of all pairs',
      zArg,
      8,
    )
    .option('--json', 'print the JSON report instead of the table (no progress bar)')
    .addHelpText(
      'after',
      '\nPrints identity labels and aggregate statistics only. Exit codes: 0 report printed,\n' +
        '1 the dataset cannot be read or fewer than two identities enrol, 2 bad usage.',
    )
    .action(async (dir: string, o: LookAlikeCliOptions) => {
      if (o.baseline && !o.roi)
        throw new InvalidArgumentError(
          '--baseline needs --roi: the CompCode baseline codes already-cropped palms only',
        );
      const dataset = await listDataset(dir);
      const files = dataset.subjects.flatMap((s, si) => s.files.map((file) => ({ file, subject: si })));
      const quiet = o.json === true;
      const bar = quiet ? null : progressBar(files.length, 'extracting');
      const words: Uint32Array[] = [];
      const subjectOf: number[] = [];
      let failed = 0;
      // one template per image, the plain distance: no rotation variants
      const extract = o.baseline ? baselineExtract : palmExtract({ roi: o.roi, sensor: o.sensor });
      for (const [i, f] of files.entries()) {
        const r = await extract(f.file);
        if ('template' in r) {
          words.push(packTemplate(decodeTemplate(r.template)));
          subjectOf.push(f.subject);
        } else failed++;
        bar?.update(i + 1);
      }
      bar?.stop();
      if (new Set(subjectOf).size < 2) {
        console.error(
          `error: fewer than two identities of ${dir} gave a template (${failed} image(s) refused)`,
        );
        process.exitCode = 1;
        return;
      }
      const all = new Uint32Array(words.length * PACKED_WORDS);
      for (const [i, w] of words.entries()) all.set(w, i * PACKED_WORDS);
      const matchBar = quiet ? null : progressBar(words.length, 'matching  ');
      const report = lookAlikeIdentities(
        dataset.subjects.map((s) => s.name),
        subjectOf,
        (i, j) =>
          (o.baseline ? baselineDistance : packedDistance)(all, i * PACKED_WORDS, all, j * PACKED_WORDS),
        { top: o.top, flagZ: o.flagZ, onRow: (i) => matchBar?.update(i + 1) },
      );
      matchBar?.stop();
      if (failed > 0) console.error(`${failed} image(s) refused by the capture pipeline (left out)`);
      const matcher = o.baseline ? 'CompCode' : 'palmid';
      if (o.json) console.log(JSON.stringify({ matcher, ...report, refused: failed }));
      else process.stdout.write(formatReport(dir, report, failed, matcher));
    });
}
