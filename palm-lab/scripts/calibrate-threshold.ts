/**
 * Pools genuine and impostor distances over ROI datasets and prints the score threshold at
 * FMR 1e-3 / 1e-4 / 1e-5 with the FNMR there. Pairs are scored like `palm eval --roi`: the
 * rotation-tolerant distance over the probe angles (default ROI_ROTATION_ANGLES; feeds
 * ROI_MATCH_THRESHOLD in shared/palm/src/capture/roi-rotation.ts). `--rotations 0` scores the plain
 * distance (feeds shared/palm/src/threshold.ts). `--sensor <profile>` takes whole frames instead,
 * through the kiosk pipeline under that sensor profile, scored like `palm eval --sensor` and the
 * server's matcher (plain distance; a site's own threshold for a camera, docs/palm-pipeline.md).
 * `--at <scores>` adds the FMR and FNMR at those score thresholds (comma-separated).
 * `--same a=b,…` merges two labels of one person, as `palm eval --same` does, in each set that holds both
 * (docs/palm-pipeline.md, "Look-alike identities").
 * `npm run palm -- calibrate threshold` is the command for MATCH_THRESHOLD (plain distance, whole frames
 * or `--roi`, docs/calibrate.md); this script stays for the rotation-tolerant ROI_MATCH_THRESHOLD.
 * usage: tsx palm-lab/scripts/calibrate-threshold.ts [--rotations 0,-8,8 | --sensor <profile>] [--at 0.4,0.5]
 *   [--same a=b,…] <dir>...
 */
import { AppError } from '@palmid/contracts/errors';
import { readImage } from '@palmid/palm/capture/image-io';
import { ROI_MATCH_THRESHOLD, ROI_ROTATION_ANGLES } from '@palmid/palm/capture/roi-rotation';
import { extractRoiTemplates } from '@palmid/palm/capture/roi-template';
import { isSensorName, SENSOR_NAMES, type SensorName } from '@palmid/palm/capture/sensor-profiles';
import { distanceToScore } from '@palmid/palm/match';
import { MATCH_THRESHOLD } from '@palmid/palm/threshold';
import { sameList } from '../src/eval/command.ts';
import { listDataset, mergeSameIdentities, type SameIdentity } from '../src/eval/dataset.ts';
import { evaluate } from '../src/eval/evaluate.ts';
import { palmExtract } from '../src/eval/extract.ts';

const args = process.argv.slice(2);
let angles = [...ROI_ROTATION_ANGLES];
const flag = args.indexOf('--rotations');
if (flag >= 0) {
  angles = [
    0,
    ...new Set(
      args[flag + 1]!.split(',')
        .map(Number)
        .filter((a) => a !== 0),
    ),
  ];
  if (angles.some((a) => !Number.isFinite(a))) throw new Error('bad --rotations');
  args.splice(flag, 2);
}
let extraScores: number[] = [];
const atFlag = args.indexOf('--at');
if (atFlag >= 0) {
  extraScores = (args[atFlag + 1] ?? '').split(',').map(Number);
  if (extraScores.length === 0 || extraScores.some((x) => !Number.isFinite(x) || x < -1 || x > 1)) {
    console.error('error: --at must be comma-separated scores in [-1, 1]');
    process.exit(2);
  }
  args.splice(atFlag, 2);
}
let sensor: SensorName | undefined;
const sensorFlag = args.indexOf('--sensor');
if (sensorFlag >= 0) {
  const name = args[sensorFlag + 1] ?? '';
  if (!isSensorName(name)) {
    console.error(`error: --sensor must be one of ${SENSOR_NAMES.join(', ')}`);
    process.exit(2);
  }
  sensor = name;
  angles = [0];
  args.splice(sensorFlag, 2);
}
let same: SameIdentity[] = [];
const sameFlag = args.indexOf('--same');
if (sameFlag >= 0) {
  try {
    same = sameList(args[sameFlag + 1] ?? '');
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exit(2);
  }
  args.splice(sameFlag, 2);
}
console.log(
  JSON.stringify({
    ...(sensor ? { sensor, frames: 'whole' } : { rotations: angles }),
    ...(same.length > 0 ? { same_person: same.map((m) => `${m.into}=${m.from}`) } : {}),
  }),
);

// every set listed first: a bad folder or a --same merge that names no set stops before any work;
// each set takes the merges whose two labels it holds
const datasets: Array<Awaited<ReturnType<typeof listDataset>>> = [];
const applied = new Set<SameIdentity>();
for (const dir of args) {
  try {
    const listed = await listDataset(dir);
    const names = new Set(listed.subjects.map((s) => s.name));
    const mine = same.filter((m) => names.has(m.into) && names.has(m.from));
    for (const m of mine) applied.add(m);
    datasets.push(mine.length > 0 ? mergeSameIdentities(listed, mine) : listed);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    console.error(`error: ${dir}: ${err.message}`);
    process.exit(2);
  }
}
const unmatched = same.filter((m) => !applied.has(m));
if (unmatched.length > 0) {
  console.error(
    `error: --same ${unmatched.map((m) => `${m.into}=${m.from}`).join(',')}: no set holds both labels`,
  );
  process.exit(2);
}

const impostor: number[] = [];
const genuine: number[] = [];
for (const [i, dataset] of datasets.entries()) {
  const { extra, report } = await evaluate(
    dataset,
    async (f) => {
      // a frame the pipeline refuses is a failure to acquire, as in `palm eval`
      if (sensor) return palmExtract({ sensor })(f);
      const [template, ...variants] = await extractRoiTemplates(await readImage(f), angles);
      return { template: template!, variants };
    },
    { sides: sensor !== undefined },
  );
  // a loop, not push(...x): spreading 300 k arguments overflows the stack
  for (const d of extra.impostor) impostor.push(d);
  for (const d of extra.genuine) genuine.push(d);
  console.log(args[i], JSON.stringify(report));
}
impostor.sort((a, b) => a - b);
for (const fmr of [1e-3, 1e-4, 1e-5]) {
  const t = impostor[Math.floor(fmr * impostor.length)]!;
  const fnmr = genuine.filter((g) => g >= t).length / genuine.length;
  console.log(
    JSON.stringify({
      fmr,
      distance: Number(t.toFixed(4)),
      score: Number(distanceToScore(t).toFixed(4)),
      fnmr: Number(fnmr.toFixed(5)),
    }),
  );
}
// the operating point of the constant in use (ROI_MATCH_THRESHOLD, or MATCH_THRESHOLD for "0")
for (const score of [
  ...(angles.length > 1 ? [ROI_MATCH_THRESHOLD, 0.5] : [MATCH_THRESHOLD]),
  ...extraScores,
]) {
  const d = (1 - score) / 2;
  const fmr = impostor.filter((x) => x < d).length / impostor.length;
  const fnmr = genuine.filter((g) => g >= d).length / genuine.length;
  console.log(
    JSON.stringify({ threshold: score, fmr: Number(fmr.toExponential(3)), fnmr: Number(fnmr.toFixed(5)) }),
  );
}
console.log(JSON.stringify({ genuine: genuine.length, impostor: impostor.length }));
