/**
 * Pools genuine and impostor distances over datasets and prints the score threshold at FMR 1e-3 /
 * 1e-4 / 1e-5 with the FNMR there. A thin wrapper over `palm calibrate threshold`'s pooling
 * (palm-lab/src/calibrate/threshold.ts, docs/calibrate.md), kept for its other ways of scoring:
 * by default ROI datasets scored like `palm eval --roi`, the rotation-tolerant distance over the
 * probe angles (ROI_ROTATION_ANGLES; feeds ROI_MATCH_THRESHOLD in
 * shared/palm/src/capture/roi-rotation.ts; `palm calibrate threshold --roi --variants`).
 * `--rotations 0` scores the plain distance (feeds shared/palm/src/threshold.ts;
 * `palm calibrate threshold --roi`). `--sensor <profile>` takes whole frames instead, through the
 * kiosk pipeline under that sensor profile, scored like `palm eval --sensor` and the server's
 * matcher (`palm calibrate threshold --sensor <profile>`).
 * `--at <scores>` adds the FMR and FNMR at those score thresholds (comma-separated).
 * `--same a=b,…` merges two labels of one person, as `palm eval --same` does, in each set that holds both
 * (docs/palm-pipeline.md, "Look-alike identities").
 * usage: tsx palm-lab/scripts/calibrate-threshold.ts [--rotations 0,-8,8 | --sensor <profile>] [--at 0.4,0.5]
 *   [--same a=b,…] <dir>...
 */
import { ROI_MATCH_THRESHOLD, ROI_ROTATION_ANGLES } from '@palmid/palm/capture/roi-rotation';
import { isSensorName, SENSOR_NAMES, type SensorName } from '@palmid/palm/capture/sensor-profiles';
import { MATCH_THRESHOLD } from '@palmid/palm/threshold';
import { InvalidArgumentError } from 'commander';
import { loadSets } from '../src/calibrate/common.ts';
import { pointAt, pooledPairs, ratesAt } from '../src/calibrate/threshold.ts';
import { sameList } from '../src/eval/command.ts';
import type { SameIdentity } from '../src/eval/dataset.ts';

function usage(message: string): never {
  console.error(`error: ${message}`);
  process.exit(2);
}

const args = process.argv.slice(2);
let angles = [...ROI_ROTATION_ANGLES];
const flag = args.indexOf('--rotations');
if (flag >= 0) {
  angles = [
    0,
    ...new Set(
      (args[flag + 1] ?? '')
        .split(',')
        .map(Number)
        .filter((a) => a !== 0),
    ),
  ];
  if (angles.some((a) => !Number.isFinite(a))) usage('--rotations must be comma-separated angles');
  args.splice(flag, 2);
}
let extraScores: number[] = [];
const atFlag = args.indexOf('--at');
if (atFlag >= 0) {
  extraScores = (args[atFlag + 1] ?? '').split(',').map(Number);
  if (extraScores.length === 0 || extraScores.some((x) => !Number.isFinite(x) || x < -1 || x > 1))
    usage('--at must be comma-separated scores in [-1, 1]');
  args.splice(atFlag, 2);
}
let sensor: SensorName | undefined;
const sensorFlag = args.indexOf('--sensor');
if (sensorFlag >= 0) {
  const name = args[sensorFlag + 1] ?? '';
  if (!isSensorName(name)) usage(`--sensor must be one of ${SENSOR_NAMES.join(', ')}`);
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
    usage((err as Error).message);
  }
  args.splice(sameFlag, 2);
}
console.log(
  JSON.stringify({
    ...(sensor ? { sensor, frames: 'whole' } : { rotations: angles }),
    ...(same.length > 0 ? { same_person: same.map((m) => `${m.into}=${m.from}`) } : {}),
  }),
);

// every set listed first: a bad folder or a --same merge that names no set stops before any work
const options = {
  ...(sensor ? { sensors: [sensor] } : { roi: true, variants: angles.length > 1, rotations: angles }),
  same,
};
let sets: Awaited<ReturnType<typeof loadSets>>;
try {
  sets = await loadSets(args, options);
} catch (err) {
  if (err instanceof InvalidArgumentError) usage(err.message);
  throw err;
}
const pooled = await pooledPairs(sets, options);
for (const p of pooled.perSet)
  console.log(p.dir, JSON.stringify({ genuine_pairs: p.genuine.length, impostor_pairs: p.impostor.length }));
for (const fmr of [1e-3, 1e-4, 1e-5])
  console.log(JSON.stringify(pointAt(pooled.impostor, pooled.genuine, fmr) ?? { fmr, unresolved: true }));
// the operating point of the constant in use (ROI_MATCH_THRESHOLD, or MATCH_THRESHOLD for "0")
for (const score of [...(angles.length > 1 ? [ROI_MATCH_THRESHOLD, 0.5] : [MATCH_THRESHOLD]), ...extraScores])
  console.log(JSON.stringify(ratesAt(pooled.impostor, pooled.genuine, score)));
console.log(JSON.stringify({ genuine: pooled.genuine.length, impostor: pooled.impostor.length }));
