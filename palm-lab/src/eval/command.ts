import { AppError } from '@palmid/contracts/errors';
import { ROI_MATCH_THRESHOLD, ROI_ROTATION_ANGLES } from '@palmid/palm/capture/roi-rotation';
import {
  DEFAULT_SENSOR,
  type SensorName,
  sensorArg,
  sensorHelp,
  sensorProfile,
} from '@palmid/palm/capture/sensor-profiles';
import { DEFAULT_TARGET_FPIR, fmrAt, type ImpostorModel, impostorModelFor } from '@palmid/palm/decision';
import { matchThresholdFor } from '@palmid/palm/threshold';
import { Command, InvalidArgumentError } from 'commander';
import { progressBar } from '../progress.ts';
import { baselineDistance } from './baseline.ts';
import { cachedExtract } from './cache.ts';
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
  cache?: string;
  openSet: boolean;
  fusion?: boolean;
  targetFpir?: number;
  draws: number;
  impostorModel?: ImpostorModel;
  tailModel?: ImpostorModel;
}

/** `--impostor-model p,dof`: the model the decision reads evidence with (default: the shared one). */
function modelArg(v: string): ImpostorModel {
  const [p, dof, extra] = v.split(',').map((x) => Number(x.trim()));
  if (extra !== undefined || !(p! > 0 && p! < 1) || !(dof! > 1) || !Number.isFinite(dof))
    throw new InvalidArgumentError(
      '--impostor-model and --tail-model take p,dof with 0 < p < 1 and dof > 1, e.g. 0.43,478',
    );
  return { p: p!, dof: dof! };
}

/** `--target-fpir` value: a rate in (0, 1). */
function rate(v: string): number {
  const n = Number(v);
  if (!(n > 0 && n < 1))
    throw new InvalidArgumentError('--target-fpir must be a number in (0, 1), e.g. 1e-4');
  return n;
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
    .option(
      '--cache <dir>',
      "keep each image's extraction in <dir> (outside the repository) and reuse it on later runs with the same options and the same pipeline code",
    )
    .option('--no-open-set', 'skip open-set identification (open_set, impostor_model)')
    .option(
      '--target-fpir <rate>',
      'open-set: the target FPIR the decision keeps (default PALMID_TARGET_FPIR, else the shared default)',
      rate,
    )
    .option(
      '--impostor-model <p,dof>',
      'open-set: read evidence with this impostor model instead of the shipped one of the profile’s template coding (to try a refit)',
      modelArg,
    )
    .option(
      '--tail-model <p,dof>',
      "open-set: draw strangers beyond the set from this model instead of the set's own tail fit (a sensitivity check)",
      modelArg,
    )
    .option('--fusion', 'open-set: also the fusion study (templates per palm, frames per presentation)')
    .option(
      '--draws <n>',
      'open-set: draws of the stranger candidates per genuine presentation',
      positiveInt('--draws'),
      64,
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
      // the template coding the sensor writes: its shipped impostor model and 1:1 threshold
      const coding = sensor ? sensorProfile(sensor).stages.code.coding : 'wide';
      const extractPalm = o.cache
        ? cachedExtract(
            palmExtract({ ...o, sensor }),
            o.cache,
            JSON.stringify({
              roi: o.roi === true,
              rotations: o.roi ? o.rotations : [],
              sensor: sensor ?? null,
            }),
          )
        : palmExtract({ ...o, sensor });
      const { report, extra } = await run(
        dir,
        'palmid',
        extractPalm,
        {
          maxImpostorPairs: o.maxImpostors,
          operatingThreshold: o.roi ? ROI_MATCH_THRESHOLD : matchThresholdFor(coding),
          sides: !o.roi,
          ...(o.openSet
            ? {
                openSet: {
                  policy: {
                    targetFpir: o.targetFpir ?? envTargetFpir(),
                    ...(o.impostorModel ? { model: o.impostorModel } : {}),
                  },
                  draws: o.draws,
                  shipped: impostorModelFor(coding),
                  ...(o.tailModel ? { truth: o.tailModel } : {}),
                  fusion: o.fusion === true,
                },
              }
            : {}),
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
            identification: identificationPoint(report, extra.genuine),
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

/** The DET plot's N = 1e6 mark: the open-set bar's distance, the tail model's FMR there and the set's FRR. */
function identificationPoint(
  report: EvalReport,
  genuine: Float64Array,
): { gallery: number; distance: number; far: number; frr: number } | null {
  const row = report.open_set?.find((r) => r.gallery === 1e6);
  const truth = report.open_set_protocol?.truth;
  if (!row || !truth || genuine.length === 0) return null;
  let above = 0;
  for (const d of genuine) if (d > row.distance) above++;
  return {
    gallery: row.gallery,
    distance: row.distance,
    far: fmrAt(row.distance, truth),
    frr: above / genuine.length,
  };
}

/** PALMID_TARGET_FPIR as the server reads it, else the shared default. */
function envTargetFpir(): number {
  const v = process.env.PALMID_TARGET_FPIR;
  if (v === undefined || v === '') return DEFAULT_TARGET_FPIR;
  try {
    return rate(v);
  } catch {
    throw new InvalidArgumentError(`PALMID_TARGET_FPIR must be a number in (0, 1), got "${v}"`);
  }
}

function plotProblem(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  // sharp reports a missing folder or a bad extension in one line; keep only that line
  return m.split('\n')[0]!;
}
