import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readImage } from '@palmid/palm/capture/image-io';
import { processCapture } from '@palmid/palm/capture/pipeline';
import {
  DEFAULT_SENSOR,
  isSensorName,
  SENSOR_NAMES,
  SENSOR_PROFILES,
  type SensorName,
  validationTag,
} from '@palmid/palm/capture/sensor-profiles';
import { listDataset } from './dataset.ts';

/** The file `palm synth` writes beside the frames it rendered: what they are, the sensor above all. */
export const SET_MANIFEST = 'palmid-synth.json';

/** The sensor a set's manifest records (`palm synth` wrote it), or undefined. */
export async function recordedSensor(dir: string): Promise<SensorName | undefined> {
  try {
    const m = JSON.parse(await readFile(join(dir, SET_MANIFEST), 'utf8')) as { sensor?: unknown };
    return typeof m.sensor === 'string' && isSensorName(m.sensor) ? m.sensor : undefined;
  } catch {
    return undefined;
  }
}

export interface ProfileTrial {
  sensor: SensorName;
  /** sampled frames the pipeline accepted under this profile */
  accepted: number;
}

/**
 * Which sensor profile a set of whole frames looks like: up to `sample` frames spread over the set,
 * through the kiosk pipeline under every profile; the profiles that accept the most come first
 * (ties: the listed order).
 */
export async function tryProfiles(
  dir: string,
  sample = 12,
): Promise<{ sampled: number; trials: ProfileTrial[] }> {
  const files = (await listDataset(dir)).subjects.flatMap((s) => s.files);
  const step = Math.max(1, files.length / sample);
  const picked: string[] = [];
  for (let i = 0; i < files.length && picked.length < sample; i += step) picked.push(files[Math.floor(i)]!);
  const frames = [];
  for (const f of picked) {
    try {
      frames.push(await readImage(f));
    } catch {
      // an unreadable image counts for no profile
    }
  }
  const trials: ProfileTrial[] = [];
  for (const sensor of SENSOR_NAMES) {
    let accepted = 0;
    for (const frame of frames) if ((await processCapture(frame, { sensor })).ok) accepted++;
    trials.push({ sensor, accepted });
  }
  trials.sort((a, b) => b.accepted - a.accepted);
  return { sampled: picked.length, trials };
}

/**
 * The hint `palm eval` prints when most frames failed under a profile nobody chose: which profile was
 * used, which ones the sampled frames suggest instead (with how far each was validated), and the
 * command line to run. Null when no other profile does better.
 */
export function profileHint(
  dir: string,
  used: SensorName,
  failedShare: number,
  tried: { sampled: number; trials: ProfileTrial[] },
): string {
  const usedTrial = tried.trials.find((t) => t.sensor === used);
  const better = tried.trials.filter((t) => t.sensor !== used && t.accepted > (usedTrial?.accepted ?? 0));
  const lines = [
    `hint: ${Math.round(failedShare * 100)} % of the frames failed to enrol under the sensor profile ${used}${
      used === DEFAULT_SENSOR ? ' (the default: no --sensor given)' : ''
    }.`,
  ];
  if (better.length === 0) {
    lines.push(
      `  no other profile accepts more of ${tried.sampled} sampled frames; see --help for the profiles`,
    );
    return `${lines.join('\n')}\n`;
  }
  lines.push(
    `  of ${tried.sampled} sampled frames, these profiles accept more (choose the one that describes your camera):`,
  );
  for (const t of better) {
    const p = SENSOR_PROFILES[t.sensor];
    lines.push(
      `    ${t.sensor.padEnd(16)} ${String(t.accepted).padStart(3)}/${tried.sampled}  ${p.summary} [${validationTag(p.validation)}]`,
    );
  }
  lines.push(`  then: npm run palm -- eval ${dir} --sensor <profile>`);
  return `${lines.join('\n')}\n`;
}
