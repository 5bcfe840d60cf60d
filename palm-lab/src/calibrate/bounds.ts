import type { SensorName } from './committed.ts';
import {
  type CalibrateOptions,
  type CalibrationSet,
  type ConstantCheck,
  type Measures,
  measureSet,
  percentileOf,
  type SetSummary,
  setSummary,
  sig,
} from './common.ts';

/**
 * One limit set "beyond the bona fide tail": a lower limit at or below the `TAIL` percentile of
 * every set's measure, an upper one at or above the 1 − `TAIL` percentile (the committed
 * procedure of the camera quality limits and cue centres, docs/palm-pipeline.md).
 */
export const TAIL = 0.005;

export interface BoundSpec {
  /** the constant's name under a profile, e.g. `limits.minSharpness` */
  name: string;
  measure: keyof Measures;
  side: 'min' | 'max';
  /** the committed value under a profile (undefined: the profile does not use it) */
  committed: (sensor: SensorName) => number | undefined;
  /** the figure's name, e.g. "bona fide rejection rate at the limit" */
  figure: string;
  /** where the committed value under these profiles came from, when not from the bona fide tail */
  origin?: (sensors: SensorName[]) => string | undefined;
}

export interface MeasuredSet {
  set: CalibrationSet;
  measures: Measures[];
}

export async function measureSets(sets: CalibrationSet[], o: CalibrateOptions): Promise<MeasuredSet[]> {
  const out: MeasuredSet[] = [];
  for (const set of sets) out.push({ set, measures: await measureSet(set, o) });
  return out;
}

export function summaries(measured: MeasuredSet[]): SetSummary[] {
  return measured.map((m) => setSummary(m.set, m.measures.filter((x) => Object.keys(x).length > 0).length));
}

const values = (ms: Measures[], key: keyof Measures) =>
  ms.map((m) => m[key]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));

/**
 * Checks each spec's committed value against the bona fide tail of the sets whose profile uses it:
 * sets are grouped by the committed value (profiles that share a constant are pooled, as the
 * committed procedure pooled CASIA and COEP). Recomputed = the tail percentile furthest out over
 * the group's sets; agreement = the committed value lies at or beyond it; the figure is the share
 * of the group's measured bona fide images the committed value alone would refuse.
 */
export function checkBounds(
  measured: MeasuredSet[],
  specs: BoundSpec[],
  source: string,
  prefix: (sensors: SensorName[]) => string,
): { constants: ConstantCheck[]; percentiles: Array<Record<string, unknown>> } {
  const constants: ConstantCheck[] = [];
  const percentiles: Array<Record<string, unknown>> = [];
  for (const spec of specs) {
    const groups = new Map<number, MeasuredSet[]>();
    for (const m of measured) {
      const c = spec.committed(m.set.sensor);
      if (c === undefined) continue;
      groups.set(c, [...(groups.get(c) ?? []), m]);
    }
    for (const [committed, group] of groups) {
      const perSet = group.map((m) => {
        const v = values(m.measures, spec.measure);
        return {
          dir: m.set.dir,
          sensor: m.set.sensor,
          measure: spec.measure,
          measured: v.length,
          p0_5: sig(percentileOf(v, TAIL)),
          p50: sig(percentileOf(v, 0.5)),
          p99_5: sig(percentileOf(v, 1 - TAIL)),
        };
      });
      percentiles.push(...perSet.map((p) => ({ constant: spec.name, ...p })));
      const tails = perSet
        .map((p) => (spec.side === 'min' ? p.p0_5 : p.p99_5))
        .filter((x): x is number => x !== null);
      const bound = tails.length === 0 ? null : spec.side === 'min' ? Math.min(...tails) : Math.max(...tails);
      const all = group.flatMap((m) => values(m.measures, spec.measure));
      const refused = all.filter((v) => (spec.side === 'min' ? v < committed : v > committed)).length;
      const sensors = [...new Set(group.map((m) => m.set.sensor))];
      constants.push({
        constant: `${prefix(sensors)}.${spec.name}`,
        source,
        figure: { name: spec.figure, value: all.length === 0 ? null : sig(refused / all.length, 3) },
        recomputed: bound,
        committed,
        tolerance:
          spec.side === 'min'
            ? `committed ≤ recomputed (the ${TAIL * 100}th percentile, lowest over the sets)`
            : `committed ≥ recomputed (the ${100 - TAIL * 100}th percentile, highest over the sets)`,
        agrees: bound !== null && (spec.side === 'min' ? committed <= bound : committed >= bound),
        note: [
          bound === null
            ? `no image of these sets reached the ${spec.measure} measure`
            : `${all.length} measured bona fide image(s); the committed value is a rounded margin beyond the percentile, not the percentile itself`,
          spec.origin?.(sensors),
        ]
          .filter(Boolean)
          .join('; '),
      });
    }
  }
  return { constants, percentiles };
}
