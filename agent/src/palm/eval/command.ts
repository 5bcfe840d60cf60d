import { AppError } from '@palmid/shared/errors.ts';
import { MATCH_THRESHOLD } from '@palmid/shared/palm/threshold.ts';
import { Command, InvalidArgumentError } from 'commander';
import { progressBar } from '../progress.ts';
import { ROI_MATCH_THRESHOLD, ROI_ROTATION_ANGLES } from '../roi-rotation.ts';
import { DEFAULT_SENSOR, type SensorName, sensorArg, sensorHelp } from '../sensor-profiles.ts';
import { baselineDistance } from './baseline.ts';
import { listDataset, mergeSameIdentities, type SameIdentity } from './dataset.ts';
import { type DetCurve, writeDetPlot } from './det-plot.ts';
import { type EvalExtra, type EvalOptions, type EvalReport, type Extract, evaluate } from './evaluate.ts';
import { baselineExtract, palmExtract } from './extract.ts';
import { profileHint, recordedSensor, tryProfiles } from './sensor-hint.ts';
import { formatSummary } from './summary.ts';

/** `--rotations` value: probe angles in degrees, 0° first ("0" turns the rotation search off). */
export function angleList(v: string): number[] {
  const a = v.split(',').map((x) => Number(x.trim()));
  if (a.length === 0 || a.some((x) => !Number.isFinite(x) || Math.abs(x) > 45))
    throw new InvalidArgumentError('--rotations must be comma-separated angles in [-45, 45]');
  return [0, ...new Set(a.filter((x) => x !== 0))];
}

/**
 * `--same` value: `a=b[,c=d…]`, each naming two labels of one person (`b` is merged into `a`),
 * labels as `palm eval` and `palm look-alike` print them.
 */
export function sameList(v: string): SameIdentity[] {
  return v.split(',').map((part) => {
    const m = /^\s*([^=\s][^=]*?)\s*=\s*([^=\s][^=]*?)\s*$/.exec(part);
    if (!m || m[1] === m[2])
      throw new InvalidArgumentError(
        `--same takes <label>=<label>[,…] with two different labels, got "${part}"`,
      );
    return { into: m[1]!, from: m[2]! };
  });
}

function positiveInt(name: string) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 1e9)
      throw new InvalidArgumentError(`${name} must be an integer in [1, 1e9]`);
    return n;
  };
}

interface EvalCliOptions {
  roi?: boolean;
  rotations: number[];
  json?: boolean;
  plot?: string;
  baseline?: boolean;
  maxImpostors: number;
  sensor?: SensorName;
  same?: SameIdentity[];
}

async function run(
  dir: string,
  label: string,
  extract: Extract,
  options: EvalOptions,
  quiet: boolean,
  same: readonly SameIdentity[] = [],
): Promise<{ report: EvalReport; extra: EvalExtra }> {
  const listed = await listDataset(dir);
  let dataset = listed;
  try {
    if (same.length > 0) dataset = mergeSameIdentities(listed, same);
  } catch (err) {
    // a label the set does not hold is a wrong value of the option: bad usage (exit 2)
    if (err instanceof AppError && err.details.field === 'same') throw new InvalidArgumentError(err.message);
    throw err;
  }
  let bar: ReturnType<typeof progressBar> | null = null;
  let stage = '';
  const result = await evaluate(dataset, extract, {
    ...options,
    onProgress: (s, done, all) => {
      if (quiet) return;
      if (s !== stage) {
        bar?.stop();
        stage = s;
        bar = progressBar(all, `${label} ${s === 'extract' ? 'extracting' : 'matching '}`);
      }
      bar?.update(done);
    },
  });
  (bar as ReturnType<typeof progressBar> | null)?.stop();
  return result;
}

/**
 * `palm eval <dir>`: verification accuracy and failure to acquire over a `<subject>/<image>` tree.
 * The report reaches stdout before the optional DET plot is written, so a plot that cannot be
 * written costs only the plot (exit code 1), never the computed results.
 */
export function evalCommand(): Command {
  return new Command('eval')
    .description(
      'verification accuracy over <dir>/<subject>/<image>: EER and FRR at FAR 1e-3 / 1e-4 with 95 % ' +
        'confidence intervals, failure to enrol and its reasons, timings',
    )
    .argument('<dir>', 'dataset directory')
    .option('--roi', 'images are already-cropped palm ROIs (any size)')
    .option(
      '--sensor <profile>',
      `whole frames: the capture's sensor profile (default: the one palm synth recorded for the set, else simulator; when most frames fail without it, eval suggests one):\n${sensorHelp()}`,
      sensorArg,
    )
    .option(
      '--rotations <deg>',
      'with --roi: angles the later image of a pair is coded at, minimum distance kept ("0": off)',
      angleList,
      [...ROI_ROTATION_ANGLES],
    )
    .option(
      '--same <a=b,…>',
      'identities that are one person filed under two labels (see `palm look-alike`): b is merged into a, ' +
        'so their cross pairs count as genuine pairs; the report names the merges (same_person)',
      (v: string, previous: SameIdentity[] = []) => [...previous, ...sameList(v)],
    )
    .option('--json', 'print the JSON report instead of the summary (no progress bar)')
    .option('--plot <png>', 'also write the DET curve to a PNG file')
    .option('--baseline', 'with --roi: evaluate the CompCode baseline on the same set too, and the ratio')
    .option(
      '--max-impostors <n>',
      'cap on impostor comparisons (sampled evenly beyond it)',
      positiveInt('--max-impostors'),
      5_000_000,
    )
    .addHelpText(
      'after',
      '\nExit codes: 0 report printed (also when few images enrol: see enrolled, fta, failure_reasons),\n' +
        '1 the dataset cannot be read or the plot cannot be written (the report is printed first), 2 bad usage.',
    )
    .action(async (dir: string, o: EvalCliOptions) => {
      if (o.baseline && !o.roi)
        throw new InvalidArgumentError(
          '--baseline needs --roi: the CompCode baseline codes already-cropped palms only',
        );
      const quiet = o.json === true;
      // whole frames: the profile given, else the one `palm synth` recorded for the set, else the default
      const recorded = o.roi || o.sensor ? undefined : await recordedSensor(dir);
      const sensor: SensorName | undefined = o.roi ? undefined : (o.sensor ?? recorded ?? DEFAULT_SENSOR);
      const { report, extra } = await run(
        dir,
        'palmid',
        palmExtract({ ...o, sensor }),
        {
          maxImpostorPairs: o.maxImpostors,
          operatingThreshold: o.roi ? ROI_MATCH_THRESHOLD : MATCH_THRESHOLD,
          sides: !o.roi,
        },
        quiet,
        o.same,
      );
      const base = o.baseline
        ? await run(
            dir,
            'CompCode',
            baselineExtract,
            { maxImpostorPairs: o.maxImpostors, distance: baselineDistance },
            quiet,
            o.same,
          )
        : null;
      // stderr even with --json: stdout stays pure JSON, and excluded images must never go unnoticed
      if (extra.failures.length > 0) {
        console.error(
          `${extra.failures.length} image(s) failed to enrol (excluded): ${extra.failures
            .slice(0, 5)
            .map((f) => `${f.file}: ${f.reason}`)
            .join('; ')}`,
        );
      }
      // most frames refused under a profile nobody chose: say which one it was and which fit better
      if (sensor && !o.sensor && !recorded && report.images > 0 && report.fta >= 0.5) {
        process.stderr.write(profileHint(dir, sensor, report.fta, await tryProfiles(dir)));
      }
      if (o.json) {
        const out: Record<string, unknown> = { ...report, sensor: sensor ?? null };
        if (o.same) out.same_person = o.same.map((m) => `${m.into}=${m.from}`);
        if (base) {
          out.baseline = { name: 'CompCode', ...base.report };
          out.baseline_eer_ratio =
            report.eer && base.report.eer !== null ? Number((base.report.eer / report.eer).toFixed(3)) : null;
        }
        console.log(JSON.stringify(out));
      } else {
        const merged = o.same
          ? `; one person under two labels: ${o.same.map((m) => `${m.into}=${m.from}`).join(', ')}`
          : '';
        const how = o.sensor
          ? `sensor ${sensor}`
          : recorded
            ? `sensor ${sensor}, recorded by palm synth`
            : `sensor ${sensor}, the default`;
        const title = `palm eval ${dir} (${o.roi ? 'palm ROIs' : `whole frames, kiosk pipeline, ${how}`}${merged})`;
        process.stdout.write(
          formatSummary(title, report, base ? { name: 'CompCode', report: base.report } : undefined),
        );
      }
      if (o.plot) {
        const curves: DetCurve[] = [
          {
            label: 'palmid',
            points: extra.det,
            genuinePairs: report.genuine_pairs,
            impostorPairs: report.impostor_pairs,
            eer: report.eer,
            operating: report.operating_point,
          },
        ];
        if (base)
          curves.push({
            label: 'CompCode',
            points: base.extra.det,
            genuinePairs: base.report.genuine_pairs,
            impostorPairs: base.report.impostor_pairs,
            eer: base.report.eer,
          });
        try {
          await writeDetPlot(o.plot, curves, `DET: ${dir}`);
        } catch (err) {
          console.error(
            `error: cannot write the DET plot to ${o.plot}: ${plotProblem(err)} (the report above is complete)`,
          );
          process.exitCode = 1;
        }
      }
    });
}

function plotProblem(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  // sharp reports a missing folder or a bad extension in one line; keep only that line
  return m.split('\n')[0]!;
}
