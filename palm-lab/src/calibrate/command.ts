import { Command, InvalidArgumentError, Option } from 'commander';
import { sameList } from '../eval/command.ts';
import type { SameIdentity } from '../eval/dataset.ts';
import { progressBar } from '../progress.ts';
import type { SensorName } from './committed.ts';
import {
  type CalibrateOptions,
  type CalibrationReport,
  type CalibrationSet,
  loadSets,
  pairList,
  sensorList,
} from './common.ts';
import { calibrateDecision } from './decision.ts';
import { calibrateLiveness } from './liveness.ts';
import { calibrateQuality } from './quality.ts';
import { calibrateThreshold } from './threshold.ts';

export const STAGES = {
  decision:
    'the binomial impostor model of the 1:N decision (IMPOSTOR_MODELS p, dof of the sets’ template coding) from impostor tails',
  threshold:
    'the matcher threshold MATCH_THRESHOLD (ROI_MATCH_THRESHOLD with --roi --variants) at the target FMR',
  quality: 'the quality limits of the profile(s) against the bona fide tail of each measure',
  liveness: 'the liveness cue centres of the profile(s) against the bona fide tail of each cue',
} as const;
export type Stage = keyof typeof STAGES;

/** Runs one stage on dataset folders: the function the command (and the tests) call. */
export async function calibrate(
  stage: Stage,
  dirs: string[],
  o: CalibrateOptions,
  extra: { at?: number[] } = {},
) {
  if (o.variants && !o.roi)
    throw new InvalidArgumentError('--variants needs --roi: only cropped ROIs are scored with variants');
  if (o.centresOf && stage !== 'liveness')
    throw new InvalidArgumentError('--centres-of belongs to the liveness stage');
  if (o.variants && stage !== 'threshold')
    throw new InvalidArgumentError('--variants belongs to the threshold stage');
  const sets: CalibrationSet[] = await loadSets(dirs, o);
  switch (stage) {
    case 'decision':
      return calibrateDecision(sets, o);
    case 'threshold':
      return calibrateThreshold(sets, o, extra.at ?? []);
    case 'quality':
      return calibrateQuality(sets, o);
    case 'liveness':
      return calibrateLiveness(sets, o);
  }
}

const fmt = (x: number | null) =>
  x === null
    ? '—'
    : Math.abs(x) !== 0 && (Math.abs(x) < 1e-3 || Math.abs(x) >= 1e5)
      ? x.toExponential(2)
      : String(x);

/** The report as lines for a person: per set, then per constant the figure, recomputed, committed, verdict. */
export function formatReport(r: CalibrationReport): string {
  const lines = [`palm calibrate ${r.stage}: ${r.procedure}`];
  for (const s of r.sets)
    lines.push(
      `  set ${s.dir}${s.sensor ? ` (${s.sensor})` : ''}: ${s.subjects} identities, ${s.images} images, ${s.used} used` +
        (s.same_person ? `, same person ${s.same_person.join(',')}` : '') +
        (s.excluded_identity_pairs ? `, excluded pairs ${s.excluded_identity_pairs.join(',')}` : ''),
    );
  for (const c of r.constants) {
    lines.push(
      `${c.constant} (${c.source})`,
      `  ${c.figure.name}: ${fmt(c.figure.value)}`,
      `  recomputed ${fmt(c.recomputed)}, committed ${fmt(c.committed)}: ${c.agrees ? 'AGREES' : 'DIFFERS'} (${c.tolerance})`,
    );
    if (c.note) lines.push(`  ${c.note}`);
  }
  const agree = r.constants.filter((c) => c.agrees).length;
  lines.push(`${agree} of ${r.constants.length} constant(s) agree with the committed value`, '');
  return lines.join('\n');
}

interface CalibrateCliOptions {
  sensor?: SensorName[];
  cache?: string;
  json?: boolean;
  same?: SameIdentity[];
  excludePairs?: Array<[string, string]>;
  roi?: boolean;
  variants?: boolean;
  centresOf?: SensorName;
  at?: number[];
}

function scoreList(v: string): number[] {
  const a = v.split(',').map(Number);
  if (a.length === 0 || a.some((x) => !Number.isFinite(x) || x < -1 || x > 1))
    throw new InvalidArgumentError('--at must be comma-separated scores in [-1, 1]');
  return a;
}

export function calibrateCommand(): Command {
  return new Command('calibrate')
    .description(
      're-derive tuned constants from your dataset folders and print the figure each one optimised, ' +
        'the recomputed and the committed value (docs/calibrate.md)',
    )
    .addArgument(
      new Command().createArgument('<stage>', 'what to calibrate').choices(Object.keys(STAGES) as Stage[]),
    )
    .argument('<dataset-dir...>', 'folders of <identity>/<image> (hand sub-folders l/, r/ are identities)')
    .option(
      '--sensor <profile[,profile…]>',
      'the captures’ sensor profile, one for every folder or one per folder (default: the one `palm synth` recorded, else simulator)',
      sensorList,
    )
    .option(
      '--cache <dir>',
      'keep each image’s template and measures in <dir> (outside the repository; shared with `palm eval --cache`)',
    )
    .option(
      '--same <a=b,…>',
      'two labels of one person: b is merged into a, in each set that holds both',
      sameList,
    )
    .option(
      '--exclude-pairs <a~b,…>',
      'decision: leave out the impostor pairs between these identities (look-alike identity pairs)',
      pairList,
    )
    .option('--roi', 'threshold: the folders hold cropped palm ROIs (how MATCH_THRESHOLD was calibrated)')
    .option(
      '--variants',
      'threshold, with --roi: score with the probe’s rotation and zoom variants as `palm eval --roi` does (ROI_MATCH_THRESHOLD)',
    )
    .option(
      '--centres-of <profile>',
      'liveness: check this profile’s cue centres against the sets (measured under their own --sensor), ' +
        'for a profile without bona fide captures of its own (the NIR profiles)',
      (v: string) => {
        const [name] = sensorList(v);
        if (v.includes(',')) throw new InvalidArgumentError('--centres-of takes one profile');
        return name!;
      },
    )
    .option('--at <scores>', 'threshold: also print FMR and FNMR at these score thresholds', scoreList)
    .addOption(new Option('--json', 'print the report as one JSON object'))
    .addHelpText(
      'after',
      `\nStages:\n${Object.entries(STAGES)
        .map(([k, v]) => `  ${k.padEnd(10)} ${v}`)
        .join(
          '\n',
        )}\n\nExit codes: 0 the run finished (whether or not the values agree; see "agrees" in the JSON), ` +
        '1 a failure, 2 bad usage.\nExample: npm run palm -- calibrate decision <casia-dir> <coep-dir> ' +
        '--sensor grey-dark,colour --cache <cache-dir>\n',
    )
    .action(async (stage: Stage, dirs: string[], o: CalibrateCliOptions) => {
      let bar: ReturnType<typeof progressBar> | undefined;
      let label = '';
      const onProgress = (l: string, done: number, total: number) => {
        if (l !== label) {
          bar?.stop();
          bar = progressBar(total, l);
          label = l;
        }
        bar!.update(done);
      };
      let report: CalibrationReport;
      try {
        report = await calibrate(
          stage,
          dirs,
          {
            sensors: o.sensor,
            cache: o.cache,
            same: o.same,
            excludePairs: o.excludePairs,
            roi: o.roi,
            variants: o.variants,
            centresOf: o.centresOf,
            onProgress,
          },
          { at: o.at ?? [] },
        );
      } finally {
        bar?.stop();
      }
      if (o.json) console.log(JSON.stringify(report));
      else process.stdout.write(formatReport(report));
    });
}
