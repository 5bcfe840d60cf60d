import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { installFatalHandlers } from '@palmid/contracts/cli/fatal';
import { AppError } from '@palmid/contracts/errors';
import {
  type Attack,
  renderPalm,
  SENSOR_DESCRIPTIONS,
  SENSORS,
  type Sensor,
} from '@palmid/firmware-sim/synth/index';
import { readImage } from '@palmid/palm/capture/image-io';
import { processCapture } from '@palmid/palm/capture/pipeline';
import {
  ROI_MATCH_THRESHOLD,
  ROI_ROTATION_ANGLES,
  rotationTolerantDistance,
} from '@palmid/palm/capture/roi-rotation';
import { extractRoiTemplate, extractRoiTemplates } from '@palmid/palm/capture/roi-template';
import { type SensorName, sensorArg, sensorHelp } from '@palmid/palm/capture/sensor-profiles';
import {
  compareTemplates,
  distanceToScore,
  PACKED_WORDS,
  packedDistance,
  packTemplate,
} from '@palmid/palm/match';
import { decodeTemplate, TEMPLATE_MAGIC } from '@palmid/palm/template';
import { matchThresholdFor } from '@palmid/palm/threshold';
import { verifyProofCommand } from '@palmid/server/cli/verify-proof';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import sharp from 'sharp';
import { calibrateCommand } from './calibrate/command.ts';
import { angleList, evalCommand } from './eval/command.ts';
import { lookAlikeCommand } from './eval/look-alike-command.ts';
import { evaluatePadDir, formatPadSummary } from './eval/pad-dir.ts';
import { evaluatePad } from './eval/pad-eval.ts';
import { recordedSensor, SET_MANIFEST } from './eval/sensor-hint.ts';
import { progressBar } from './progress.ts';
import { roiCommand } from './roi-export.ts';
import { extractTemplate } from './template-file.ts';

/** Exit codes of every palmid CLI (docs/cli.md): 0 ok, 1 a negative result or a failure, 2 bad usage. */
export const EXIT = { OK: 0, FAILED: 1, USAGE: 2 } as const;

function int(name: string, min: number, max: number) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`${name} must be an integer in [${min}, ${max}]`);
    return n;
  };
}

/** A template file (starts with the "PT" magic) or an image. */
async function templateFrom(path: string, roi: boolean): Promise<Uint8Array> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch {
    throw new AppError('INVALID_REQUEST', `Cannot read ${path}`, { field: 'file', reason: 'unreadable' });
  }
  if (bytes.length >= 2 && bytes.readUInt16LE(0) === TEMPLATE_MAGIC) {
    const t = new Uint8Array(bytes);
    decodeTemplate(t);
    return t;
  }
  return extractTemplate(path, roi);
}

/** Packs templates back to back (probe variants for `rotationTolerantDistance`). */
function packAll(templates: Uint8Array[]): Uint32Array {
  const words = templates.map((t) => packTemplate(decodeTemplate(t)));
  const out = new Uint32Array(words.reduce((n, w) => n + w.length, 0));
  let o = 0;
  for (const w of words) {
    out.set(w, o);
    o += w.length;
  }
  return out;
}

interface PadCliOptions {
  identities: number;
  seed: string;
  offset: number;
  sensor?: SensorName;
  json?: boolean;
}

export function buildCli(): Command {
  const program = new Command('palm')
    .description('palmid palm pipeline tools: synthesise, extract, match and evaluate')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .addHelpText(
      'after',
      '\nExit codes: 0 ok, 1 a negative result (no match, capture refused) or a failure, 2 bad usage.',
    );

  program
    .command('synth')
    .description('render synthetic hand frames as <out>/<identity>_<hand>/<capture>.png (an eval dataset)')
    .argument('[out]', 'output directory', 'synth-palms')
    .option('--identities <n>', 'number of identities', int('identities', 1, 100000), 20)
    .option('--captures <n>', 'captures per hand', int('captures', 1, 1000), 5)
    .option('--hand <hand>', 'left | right | both', 'both')
    .option('--attack <kind>', 'render presentation attacks instead: print | screen')
    .option('--width <px>', 'frame width', int('width', 32, 2000), 320)
    .option('--height <px>', 'frame height', int('height', 32, 2000), 240)
    .option('--seed <prefix>', 'identity name prefix', 'id')
    .option('--json', 'print what was written as one JSON object (also kept in <out>/palmid-synth.json)')
    .addOption(
      new Option(
        '--sensor <profile>',
        `what the frames look like: ${SENSORS.map((k) => `${k}: ${SENSOR_DESCRIPTIONS[k]}`).join('; ')}`,
      )
        .choices(SENSORS)
        .default('simulator'),
    )
    .action(
      async (
        out: string,
        o: {
          identities: number;
          captures: number;
          hand: string;
          attack?: string;
          width: number;
          height: number;
          seed: string;
          sensor: Sensor;
          json?: boolean;
        },
      ) => {
        if (!['left', 'right', 'both'].includes(o.hand))
          throw new InvalidArgumentError('--hand must be left, right or both');
        if (o.attack !== undefined && o.attack !== 'print' && o.attack !== 'screen')
          throw new InvalidArgumentError('--attack must be print or screen');
        const hands =
          o.hand === 'both' ? (['left', 'right'] as const) : ([o.hand] as Array<'left' | 'right'>);
        const total = o.identities * hands.length * o.captures;
        const bar = progressBar(total, 'rendering');
        for (let i = 0; i < o.identities; i++) {
          for (const hand of hands) {
            const identity = `${o.seed}${String(i + 1).padStart(4, '0')}`;
            const dir = join(out, `${identity}_${hand}`);
            await mkdir(dir, { recursive: true });
            for (let c = 1; c <= o.captures; c++) {
              const spec = { identity, hand, capture: c, width: o.width, height: o.height, sensor: o.sensor };
              const f = await renderPalm(o.attack ? { ...spec, attack: o.attack as Attack } : spec);
              await sharp(f.rgb ?? f.data, {
                raw: { width: f.width, height: f.height, channels: f.rgb ? 3 : 1 },
              })
                .png()
                .toFile(join(dir, `${c}.png`));
              bar.increment();
            }
          }
        }
        bar.stop();
        // what was rendered, kept beside the frames: `palm eval` reads the sensor from it
        const manifest = {
          out,
          identities: o.identities,
          hands: hands.length,
          captures: o.captures,
          sensor: o.sensor,
          attack: o.attack ?? null,
          width: o.width,
          height: o.height,
          seed: o.seed,
          images: total,
          manifest: join(out, SET_MANIFEST),
        };
        await writeFile(manifest.manifest, `${JSON.stringify(manifest, null, 2)}\n`);
        if (o.json) {
          console.log(JSON.stringify(manifest));
          return;
        }
        const first = `${o.seed}${'1'.padStart(4, '0')}_${hands[0]}`;
        const last = `${o.seed}${String(o.identities).padStart(4, '0')}_${hands.at(-1)}`;
        process.stdout.write(
          [
            `wrote ${total} frame(s) to ${out}: ${o.identities} identit${o.identities === 1 ? 'y' : 'ies'} × ${
              hands.length === 2 ? 'both hands' : `the ${hands[0]} hand`
            } × ${o.captures} capture(s)${o.attack ? `, ${o.attack} attacks` : ''}`,
            `  sensor ${o.sensor} (${SENSOR_DESCRIPTIONS[o.sensor]}), ${o.width} × ${o.height} PNG`,
            `  files: ${join(out, first, '1.png')} … ${join(out, last, `${o.captures}.png`)}`,
            `  recorded in ${manifest.manifest} (palm eval takes the sensor from it)`,
            `next: npm run palm -- eval ${out}`,
            '',
          ].join('\n'),
        );
      },
    );

  program
    .command('extract')
    .description('extract a template from a whole-hand frame (or an already-cropped ROI with --roi)')
    .argument('<image>', 'BMP, PNG, JPEG or PGM file')
    .option('--roi', 'the image is an already-cropped palm ROI')
    .option(
      '--sensor <profile>',
      `the capture's sensor profile (default simulator):\n${sensorHelp()}`,
      sensorArg,
    )
    .option('-o, --out <file>', 'write the binary template to a file')
    .action(async (image: string, o: { roi?: boolean; out?: string; sensor?: SensorName }) => {
      const img = await readImage(image);
      let result: Record<string, unknown>;
      let template: Uint8Array;
      if (o.roi) {
        template = await extractRoiTemplate(img);
        result = { ok: true, bytes: template.length };
      } else {
        const r = await processCapture(img, o.sensor ? { sensor: o.sensor } : {});
        if (!r.ok) {
          console.log(JSON.stringify({ ok: false, reason: r.reason, message: r.message }));
          process.exitCode = EXIT.FAILED;
          return;
        }
        template = r.template;
        result = { ok: true, hand: r.hand, quality: r.quality, liveness: r.liveness, bytes: template.length };
      }
      if (o.out) await writeFile(o.out, template);
      console.log(
        JSON.stringify({ ...result, template: o.out ? o.out : Buffer.from(template).toString('base64') }),
      );
    });

  program
    .command('match')
    .description('compare two palms (images or template files) 1:1')
    .argument('<a>', 'image or template file')
    .argument('<b>', 'image or template file')
    .option('--roi', 'images are already-cropped palm ROIs (b, the probe, is searched over rotations)')
    .option('--rotations <deg>', 'with --roi: probe angles, comma-separated', angleList, [
      ...ROI_ROTATION_ANGLES,
    ])
    .action(async (a: string, b: string, o: { roi?: boolean; rotations: number[] }) => {
      let score: number;
      let threshold = matchThresholdFor('wide');
      const isTemplate = async (f: string) => {
        const bytes = await readFile(f).catch(() => null);
        return bytes !== null && bytes.length >= 2 && bytes.readUInt16LE(0) === TEMPLATE_MAGIC;
      };
      if (o.roi && o.rotations.length > 1 && !(await isTemplate(b))) {
        // the distance of `eval --roi`: b's variants against a's template and, when a is an
        // image too, a's variants against b's template
        const vb = await extractRoiTemplates(await readImage(b), o.rotations);
        const va = (await isTemplate(a))
          ? [await templateFrom(a, true)]
          : await extractRoiTemplates(await readImage(a), o.rotations);
        const pa = packAll(va);
        const pb = packAll(vb);
        let d = rotationTolerantDistance(pa, 0, pb, 0, vb.length);
        for (let k = 1; k < va.length; k++) d = Math.min(d, packedDistance(pa, k * PACKED_WORDS, pb, 0));
        score = distanceToScore(d);
        threshold = ROI_MATCH_THRESHOLD;
      } else {
        const ta = await templateFrom(a, o.roi ?? false);
        const tb = await templateFrom(b, o.roi ?? false);
        const ca = decodeTemplate(ta).coding ?? 'wide';
        const cb = decodeTemplate(tb).coding ?? 'wide';
        if (ca !== cb)
          throw new AppError(
            'INVALID_REQUEST',
            `${a} is coded "${ca}" and ${b} "${cb}": templates of two codings cannot be compared`,
            { field: 'template', reason: 'wrong_coding' },
          );
        threshold = matchThresholdFor(ca);
        score = compareTemplates(ta, tb);
      }
      console.log(
        JSON.stringify({
          score: Number(score.toFixed(4)),
          match: score >= threshold,
          threshold,
        }),
      );
      if (score < threshold) process.exitCode = EXIT.FAILED;
    });

  program.addCommand(evalCommand());
  program.addCommand(lookAlikeCommand());
  program.addCommand(calibrateCommand());
  program
    .command('pad')
    .description(
      'presentation-attack detection, APCER / BPCER (ISO/IEC 30107-3): on your own captures with <dir> ' +
        '(<dir>/bona-fide/ and one folder per attack type), else on synthetic captures',
    )
    .argument('[dir]', 'your captures: <dir>/bona-fide/* and <dir>/<attack type>/* (e.g. print/, screen/)')
    .option(
      '--sensor <profile>',
      `with <dir>: the captures' sensor profile (default simulator):\n${sensorHelp()}`,
      sensorArg,
    )
    .option('--json', 'with <dir>: print the JSON report instead of the summary')
    .option(
      '--identities <n>',
      'bona fide captures (and as many print and screen attacks)',
      int('identities', 1, 100000),
      200,
    )
    .option('--seed <prefix>', 'identity name prefix (another prefix is an independent data set)', 'pad')
    .option('--offset <n>', 'index of the first identity', int('offset', 0, 1e9), 0)
    .action(async (dir: string | undefined, o: PadCliOptions) => {
      if (dir !== undefined) {
        const sensor = o.sensor ?? (await recordedSensor(dir)) ?? 'simulator';
        // the bar starts with the first image checked, and stops whatever happens (an unreadable folder)
        let dirBar: ReturnType<typeof progressBar> | undefined;
        let report: Awaited<ReturnType<typeof evaluatePadDir>>;
        try {
          report = await evaluatePadDir(dir, sensor, (done, total) => {
            if (o.json) return;
            dirBar ??= progressBar(total, 'checking');
            dirBar.update(done);
          });
        } finally {
          dirBar?.stop();
        }
        if (o.json) console.log(JSON.stringify(report));
        else process.stdout.write(formatPadSummary(report));
        if (report.bona_fide.images === 0 && report.attacks.every((a) => a.images === 0))
          process.exitCode = EXIT.FAILED;
        return;
      }
      const bar = progressBar(o.identities * 3, 'rendering and checking');
      const report = await evaluatePad(o.identities, {
        seed: o.seed,
        offset: o.offset,
        onProgress: (done) => bar.update(done),
      });
      bar.stop();
      console.log(JSON.stringify(report, null, 2));
    });
  program.addCommand(roiCommand());
  program.addCommand(verifyProofCommand());
  // bad usage anywhere reaches main() as a CommanderError (exit code 2), never process.exit(1)
  for (const c of program.commands) c.exitOverride().showHelpAfterError('(run with --help for usage)');
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof InvalidArgumentError) {
      // thrown by an action (commander prints those of option parsers itself)
      console.error(`error: ${err.message}`);
      process.exitCode = EXIT.USAGE;
    } else if (err instanceof CommanderError) {
      // commander printed the message (or the help); --help and --version are not errors
      process.exitCode = err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    } else {
      console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = EXIT.FAILED;
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  installFatalHandlers('palm');
  await main(process.argv);
}
