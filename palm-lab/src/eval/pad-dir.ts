import { AppError } from '@palmid/contracts/errors';
import type { CaptureMeasures } from '@palmid/palm/capture/capture-checks';
import { readImage } from '@palmid/palm/capture/image-io';
import { LIVENESS_THRESHOLD, livenessScore } from '@palmid/palm/capture/liveness';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { type SensorName, sensorProfile } from '@palmid/palm/capture/sensor-profiles';
import { listDataset } from './dataset.ts';

/** The folder of bona fide presentations; every other top-level folder is one attack type. */
export const BONA_FIDE_DIR = /^(bona[-_ ]?fide|live|genuine|real)$/i;

/** One group of presentations (the bona fide ones, or one attack type). */
export interface PadGroup {
  name: string;
  images: number;
  /** refused before the liveness check (quality, no hand) or unreadable, by reason */
  not_scored: Record<string, number>;
  /** liveness scores (0–100) of the images that reached the liveness check */
  scores: number[];
  /** accepted end to end by the kiosk pipeline (a template was made) */
  accepted: number;
}

export interface PadDirReport {
  dir: string;
  sensor: SensorName;
  /** liveness score (0–100) at or above which a presentation counts as bona fide */
  threshold: number;
  bona_fide: PadGroup & {
    /** bona fide presentations classified as attacks, of those scored (ISO/IEC 30107-3 BPCER) */
    bpcer: number | null;
    /** bona fide presentations the pipeline refused before the liveness check (failure to acquire) */
    fta: number;
  };
  attacks: Array<
    PadGroup & {
      /** attack presentations classified as bona fide, of those scored (APCER of this type) */
      apcer: number | null;
      /** attacks accepted end to end, of all of this type (quality refusals count as stopped) */
      system_apcer: number;
    }
  >;
  /** the worst attack type's APCER (ISO/IEC 30107-3 reports the maximum over types) */
  apcer_max: number | null;
  /** thresholds chosen on these data for BPCER ≤ 1 %, 5 %, 10 %, and each type's APCER there */
  det: Array<{ bpcer_target: number; threshold: number; bpcer: number; apcer: Record<string, number> }>;
}

const rate = (xs: number[], pred: (x: number) => boolean) =>
  xs.length === 0 ? null : xs.filter(pred).length / xs.length;

/**
 * `palm pad <dir>`: presentation-attack detection on one's own captures. `<dir>/bona-fide/` (also
 * `live/`, `genuine/`, `real/`) holds bona fide presentations; every other folder under `<dir>` is one
 * attack type named after it (`print/`, `screen/`, `silicone/`…). Images anywhere below a folder count.
 * Each image goes through the kiosk pipeline under `sensor`: the liveness score where it reaches the
 * liveness check, and whether the pipeline accepted it end to end.
 */
export async function evaluatePadDir(
  dir: string,
  sensor: SensorName,
  onProgress?: (done: number, total: number) => void,
): Promise<PadDirReport> {
  let listed: Awaited<ReturnType<typeof listDataset>>;
  try {
    listed = await listDataset(dir);
  } catch (err) {
    if (err instanceof AppError && err.details.reason === 'too_few_subjects')
      throw new AppError(
        'INVALID_REQUEST',
        `${dir} needs a bona-fide/ folder and at least one attack folder (e.g. print/), each with images`,
        { field: 'dir', reason: 'too_few_folders' },
      );
    throw err;
  }
  const byTop = new Map<string, string[]>();
  for (const s of listed.subjects) {
    const top = s.name.split('/')[0]!;
    byTop.set(top, [...(byTop.get(top) ?? []), ...s.files]);
  }
  const bonaName = [...byTop.keys()].find((k) => BONA_FIDE_DIR.test(k));
  const profile = sensorProfile(sensor);
  const total = [...byTop.values()].reduce((n, f) => n + f.length, 0);
  let done = 0;
  const score = async (name: string, files: string[]): Promise<PadGroup> => {
    const g: PadGroup = { name, images: files.length, not_scored: {}, scores: [], accepted: 0 };
    for (const f of files) {
      let reason: string | null = null;
      try {
        const r = await processCapture(await readImage(f), { sensor });
        if (r.ok) {
          g.accepted++;
          g.scores.push(r.liveness);
        } else if (r.reason === 'liveness_failed' && r.measures) {
          g.scores.push(
            livenessScore(
              r.measures as CaptureMeasures,
              profile.stages.liveness.cues,
              profile.stages.liveness.centres,
            ),
          );
        } else reason = r.reason;
      } catch {
        reason = 'unreadable';
      }
      if (reason) g.not_scored[reason] = (g.not_scored[reason] ?? 0) + 1;
      onProgress?.(++done, total);
    }
    return g;
  };
  const bona = bonaName ? await score(bonaName, byTop.get(bonaName)!) : undefined;
  const attacks: PadGroup[] = [];
  for (const [name, files] of byTop) if (name !== bonaName) attacks.push(await score(name, files));
  const live = bona?.scores ?? [];
  const apcerAt = (t: number) =>
    Object.fromEntries(attacks.map((a) => [a.name, rate(a.scores, (s) => s >= t) ?? 0]));
  const sorted = [...live].sort((a, b) => a - b);
  const det =
    sorted.length === 0 || attacks.length === 0
      ? []
      : [0.01, 0.05, 0.1].map((target) => {
          const t = sorted[Math.floor(target * sorted.length)]!;
          return { bpcer_target: target, threshold: t, bpcer: rate(live, (s) => s < t)!, apcer: apcerAt(t) };
        });
  const attackRows = attacks.map((a) => ({
    ...a,
    apcer: rate(a.scores, (s) => s >= LIVENESS_THRESHOLD),
    system_apcer: a.images === 0 ? 0 : a.accepted / a.images,
  }));
  const apcers = attackRows.map((a) => a.apcer).filter((x): x is number => x !== null);
  return {
    dir,
    sensor,
    threshold: LIVENESS_THRESHOLD,
    bona_fide: {
      ...(bona ?? { name: '(none)', images: 0, not_scored: {}, scores: [], accepted: 0 }),
      bpcer: rate(live, (s) => s < LIVENESS_THRESHOLD),
      fta: bona && bona.images > 0 ? (bona.images - bona.scores.length) / bona.images : 0,
    },
    attacks: attackRows,
    apcer_max: apcers.length ? Math.max(...apcers) : null,
    det,
  };
}

const pct = (x: number | null) => (x === null ? 'not measurable' : `${(x * 100).toFixed(1)} %`);
const reasons = (r: Record<string, number>) =>
  Object.entries(r)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');

/** The report in words, for people: rates with what they count, the threshold with its unit. */
export function formatPadSummary(r: PadDirReport): string {
  const b = r.bona_fide;
  const lines = [
    `palm pad ${r.dir} (sensor ${r.sensor}; ISO/IEC 30107-3 terms)`,
    `threshold         liveness score ${r.threshold} on a 0–100 scale (the kiosk sends ${(r.threshold / 100).toFixed(2)} to the server); below it a presentation is called an attack`,
    `bona fide         ${b.images} image(s) in ${b.name}/, ${b.scores.length} reached the liveness check${
      b.images > b.scores.length ? ` (refused before it: ${reasons(b.not_scored)})` : ''
    }`,
    `BPCER             ${pct(b.bpcer)}  bona fide presentations called attacks (of those checked)`,
    `FTA               ${pct(b.fta)}  failure to acquire: bona fide presentations refused before the liveness check`,
  ];
  for (const a of r.attacks) {
    lines.push(
      `attack ${a.name.padEnd(11)}${a.images} image(s), ${a.scores.length} reached the liveness check${
        a.images > a.scores.length ? ` (stopped before it: ${reasons(a.not_scored)})` : ''
      }`,
      `  APCER           ${pct(a.apcer)}  called bona fide (of those checked); accepted end to end: ${pct(a.system_apcer)} of all`,
    );
  }
  if (r.attacks.length === 0)
    lines.push('attacks           none: put each attack type in a folder of its own beside bona-fide/');
  lines.push(`APCER (worst)     ${pct(r.apcer_max)}`);
  for (const d of r.det)
    lines.push(
      `for BPCER ≤ ${String(d.bpcer_target * 100).padStart(2)} %   threshold ${d.threshold} (0–100): BPCER ${pct(d.bpcer)}, APCER ${Object.entries(
        d.apcer,
      )
        .map(([k, v]) => `${k} ${pct(v)}`)
        .join(', ')}`,
    );
  if (!b.scores.length)
    lines.push(
      `no bona fide presentation was checked: the bona fide folder must be named bona-fide/ (or live/, genuine/, real/)`,
    );
  return `${lines.join('\n')}\n`;
}
