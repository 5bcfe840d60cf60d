import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Attack, renderPalm } from '@palmid/firmware-sim/synth/index.ts';
import { installFatalHandlers } from '@palmid/shared/cli/fatal.ts';
import { AppError } from '@palmid/shared/errors.ts';
import {
  compareTemplates,
  distanceToScore,
  PACKED_WORDS,
  packedDistance,
  packTemplate,
} from '@palmid/shared/palm/match.ts';
import { decodeTemplate, TEMPLATE_MAGIC } from '@palmid/shared/palm/template.ts';
import { MATCH_THRESHOLD } from '@palmid/shared/palm/threshold.ts';
import { verifyProofCommand } from '@palmid/shared/zk/verify-cli.ts';
import { SingleBar } from 'cli-progress';
import { Command, InvalidArgumentError } from 'commander';
import sharp from 'sharp';
import { listDataset } from './dataset.ts';
import { writeDetPlot } from './det-plot.ts';
import { evaluate } from './evaluate.ts';
import { readImage } from './image-io.ts';
import { evaluatePad } from './pad-eval.ts';
import { processCapture } from './pipeline.ts';
import { ROI_MATCH_THRESHOLD, ROI_ROTATION_ANGLES, rotationTolerantDistance } from './roi-rotation.ts';
import { extractRoiTemplate, extractRoiTemplates } from './roi-template.ts';

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

/** `--rotations` value: probe angles in degrees, 0° first ("0" turns the rotation search off). */
function angleList(v: string): number[] {
  const a = v.split(',').map((x) => Number(x.trim()));
  if (a.length === 0 || a.some((x) => !Number.isFinite(x) || Math.abs(x) > 45))
    throw new InvalidArgumentError('--rotations must be comma-separated angles in [-45, 45]');
  return [0, ...new Set(a.filter((x) => x !== 0))];
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

async function extractTemplate(path: string, roi: boolean): Promise<Uint8Array> {
  const image = await readImage(path);
  if (roi) return extractRoiTemplate(image);
  const r = await processCapture(image);
  if (!r.ok)
    throw new AppError('INVALID_REQUEST', `${path}: ${r.message} (${r.reason})`, {
      field: 'image',
      reason: r.reason,
    });
  return r.template;
}

export function buildCli(): Command {
  const program = new Command('palm')
    .description('palmid palm pipeline tools: synthesise, extract, match and evaluate')
    .showHelpAfterError();

  program
    .command('synth')
    .description(
      'render synthetic NIR hand frames as <out>/<identity>_<hand>/<capture>.png (an eval dataset)',
    )
    .argument('[out]', 'output directory', 'synth-palms')
    .option('--identities <n>', 'number of identities', int('identities', 1, 100000), 20)
    .option('--captures <n>', 'captures per hand', int('captures', 1, 1000), 5)
    .option('--hand <hand>', 'left | right | both', 'both')
    .option('--attack <kind>', 'render presentation attacks instead: print | screen')
    .option('--width <px>', 'frame width', int('width', 32, 2000), 320)
    .option('--height <px>', 'frame height', int('height', 32, 2000), 240)
    .option('--seed <prefix>', 'identity name prefix', 'id')
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
        },
      ) => {
        if (!['left', 'right', 'both'].includes(o.hand))
          throw new InvalidArgumentError('--hand must be left, right or both');
        if (o.attack !== undefined && o.attack !== 'print' && o.attack !== 'screen')
          throw new InvalidArgumentError('--attack must be print or screen');
        const hands =
          o.hand === 'both' ? (['left', 'right'] as const) : ([o.hand] as Array<'left' | 'right'>);
        const total = o.identities * hands.length * o.captures;
        const bar = progress(total);
        for (let i = 0; i < o.identities; i++) {
          for (const hand of hands) {
            const identity = `${o.seed}${String(i + 1).padStart(4, '0')}`;
            const dir = join(out, `${identity}_${hand}`);
            await mkdir(dir, { recursive: true });
            for (let c = 1; c <= o.captures; c++) {
              const spec = { identity, hand, capture: c, width: o.width, height: o.height };
              const f = await renderPalm(o.attack ? { ...spec, attack: o.attack as Attack } : spec);
              await sharp(f.data, { raw: { width: f.width, height: f.height, channels: 1 } })
                .png()
                .toFile(join(dir, `${c}.png`));
              bar?.increment();
            }
          }
        }
        bar?.stop();
        console.log(
          JSON.stringify({
            out,
            identities: o.identities,
            hands: hands.length,
            captures: o.captures,
            images: total,
          }),
        );
      },
    );

  program
    .command('extract')
    .description('extract a template from a whole-hand frame (or an already-cropped ROI with --roi)')
    .argument('<image>', 'BMP, PNG, JPEG or PGM file')
    .option('--roi', 'the image is an already-cropped palm ROI')
    .option('-o, --out <file>', 'write the binary template to a file')
    .action(async (image: string, o: { roi?: boolean; out?: string }) => {
      const img = await readImage(image);
      let result: Record<string, unknown>;
      let template: Uint8Array;
      if (o.roi) {
        template = await extractRoiTemplate(img);
        result = { ok: true, bytes: template.length };
      } else {
        const r = await processCapture(img);
        if (!r.ok) {
          console.log(JSON.stringify({ ok: false, reason: r.reason, message: r.message }));
          process.exitCode = 2;
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
      let threshold = MATCH_THRESHOLD;
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
      } else
        score = compareTemplates(
          await templateFrom(a, o.roi ?? false),
          await templateFrom(b, o.roi ?? false),
        );
      console.log(
        JSON.stringify({
          score: Number(score.toFixed(4)),
          match: score >= threshold,
          threshold,
        }),
      );
    });

  program
    .command('eval')
    .description('verification accuracy over <dir>/<subject>/<image>: EER, FRR at FAR 1e-3 / 1e-4, timings')
    .argument('<dir>', 'dataset directory')
    .option('--roi', 'images are already-cropped palm ROIs (any size)')
    .option(
      '--rotations <deg>',
      'with --roi: angles the later image of a pair is coded at, minimum distance kept ("0": off)',
      angleList,
      [...ROI_ROTATION_ANGLES],
    )
    .option('--json', 'print only the JSON report')
    .option('--plot <png>', 'write the DET curve to a PNG file')
    .option(
      '--max-impostors <n>',
      'cap on impostor comparisons (sampled evenly beyond it)',
      int('max-impostors', 1, 1e9),
      5_000_000,
    )
    .action(
      async (
        dir: string,
        o: { roi?: boolean; rotations: number[]; json?: boolean; plot?: string; maxImpostors: number },
      ) => {
        const dataset = await listDataset(dir);
        const total = dataset.subjects.reduce((n, s) => n + s.files.length, 0);
        const bar = o.json ? null : progress(total);
        let stage = 'extract';
        const { report, extra } = await evaluate(
          dataset,
          async (file) => {
            try {
              if (o.roi && o.rotations.length > 1) {
                const [template, ...variants] = await extractRoiTemplates(await readImage(file), o.rotations);
                return { template: template!, variants };
              }
              return { template: await extractTemplate(file, o.roi ?? false) };
            } catch (err) {
              if (err instanceof AppError) return { reason: String(err.details.reason ?? err.message) };
              throw err;
            }
          },
          {
            maxImpostorPairs: o.maxImpostors,
            onProgress: (s, done, all) => {
              if (!bar) return;
              if (s !== stage) {
                stage = s;
                bar.start(all, 0);
              }
              bar.update(done);
            },
          },
        );
        bar?.stop();
        if (o.plot) await writeDetPlot(o.plot, [{ label: dir, points: extra.det, eer: report.eer }]);
        // stderr even with --json: stdout stays pure JSON, and excluded images must never go unnoticed
        if (extra.failures.length > 0) {
          console.error(
            `${extra.failures.length} image(s) failed to enrol (excluded): ${extra.failures
              .slice(0, 5)
              .map((f) => `${f.file}: ${f.reason}`)
              .join('; ')}`,
          );
        }
        console.log(JSON.stringify(report, null, o.json ? undefined : 2));
      },
    );
  program
    .command('pad')
    .description('presentation-attack detection on synthetic captures: APCER / BPCER (ISO/IEC 30107-3)')
    .option(
      '--identities <n>',
      'bona fide captures (and as many print and screen attacks)',
      int('identities', 1, 100000),
      200,
    )
    .option('--seed <prefix>', 'identity name prefix (another prefix is an independent data set)', 'pad')
    .option('--offset <n>', 'index of the first identity', int('offset', 0, 1e9), 0)
    .action(async (o: { identities: number; seed: string; offset: number }) => {
      const bar = progress(o.identities * 3);
      const report = await evaluatePad(o.identities, {
        seed: o.seed,
        offset: o.offset,
        onProgress: (done) => bar?.update(done),
      });
      bar?.stop();
      console.log(JSON.stringify(report, null, 2));
    });
  program.addCommand(verifyProofCommand());
  return program;
}

function progress(total: number): SingleBar | null {
  if (!process.stderr.isTTY) return null;
  const bar = new SingleBar({
    stream: process.stderr,
    format: '{bar} {value}/{total} {eta_formatted}',
    clearOnComplete: true,
  });
  bar.start(total, 0);
  return bar;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof AppError) {
      console.error(`error: ${err.message}`);
      process.exitCode = 1;
    } else if (err instanceof InvalidArgumentError) {
      console.error(`error: ${err.message}`);
      process.exitCode = 1;
    } else {
      console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = 1;
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  installFatalHandlers('palm');
  await main(process.argv);
}
