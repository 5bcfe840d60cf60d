import { AppError } from '@palmid/contracts/errors';
import { seededRandom } from '@palmid/firmware-sim/rng';
import type { CaptureHand } from '@palmid/palm/capture/pipeline';
import { variantMatcher } from '@palmid/palm/capture/roi-rotation';
import {
  DEFAULT_POLICY,
  type IdentificationPolicy,
  type ImpostorModel,
  resolvePolicy,
} from '@palmid/palm/decision';
import { calibratedModel } from '@palmid/palm/gallery/calibrate';
import { fitImpostorModel, type ImpostorFit } from '@palmid/palm/impostor-fit';
import { PACKED_WORDS, packedDistance, packTemplate, probeMatcher } from '@palmid/palm/match';
import { decodeTemplate } from '@palmid/palm/template';
import type { Dataset } from './dataset.ts';
import { errorRates, percentile, subjectBootstrap } from './metrics.ts';
import { OPEN_SET_GALLERIES, type OpenSetPalm, type OpenSetRow, openSet } from './open-set.ts';

/**
 * The `palm eval --json` report. Rates are fractions; a rate is null when the set gives no
 * genuine or no impostor pair (too few images enrolled), so a bad set still gets a report.
 */
export interface EvalReport {
  subjects: number;
  images: number;
  /** images that gave a template */
  enrolled: number;
  /**
   * enrolled images whose capture left the hand side undecided (hand `unknown`, camera profiles);
   * they count as enrolled and are compared with every other image like the rest. Null unless the
   * extraction reports sides (`EvalOptions.sides`: whole frames, not palm ROIs).
   */
  unknown_side: number | null;
  /** failure to acquire (= to enrol): (images − enrolled) / images */
  fta: number;
  /** why the other images gave no template: {reason: count} */
  failure_reasons: Record<string, number>;
  genuine_pairs: number;
  impostor_pairs: number;
  eer: number | null;
  frr_at_far_1e3: number | null;
  frr_at_far_1e4: number | null;
  /** 95 % confidence intervals [lo, hi], subject bootstrap (metrics.ts `subjectBootstrap`) */
  eer_ci95: [number, number] | null;
  frr_at_far_1e3_ci95: [number, number] | null;
  frr_at_far_1e4_ci95: [number, number] | null;
  /** the lowest FAR this set measures, 1 / impostor_pairs: rates at a lower FAR are not measured */
  min_far: number | null;
  /** FAR and FRR at the deployed decision threshold (a similarity score), when one was given */
  operating_point: { threshold: number; far: number; frr: number } | null;
  extract_ms_p50: number;
  match_us_p50: number;
  /**
   * With `EvalOptions.openSet`: the impostor model fitted on the set (moments and tail, with the
   * check against the measured FMR), open-set identification per gallery size through the shared
   * decision, and the fusion study (open-set.ts). Absent otherwise.
   */
  impostor_model?: ImpostorFit;
  open_set?: OpenSetRow[];
  open_set_protocol?: OpenSetProtocol;
  open_set_fusion?: FusionRow[];
}

export interface OpenSetProtocol {
  target_fpir: number;
  margin: number;
  step_up_window: number;
  /** the deployed model the decision reads evidence with */
  model: { p: number; dof: number };
  /**
   * where it comes from: `shipped` (the coding's, `impostorModelFor`), `set fit` (the set's own tail fit,
   * stricter than the shipped one: what a calibrated gallery of such palms reads, PALMID_GALLERY_CALIBRATION)
   * or `given` (--impostor-model)
   */
  model_source: 'shipped' | 'set fit' | 'given';
  /** the model strangers beyond the set are drawn from: the set's tail fit */
  truth: { p: number; dof: number };
  presentations: number;
  /** of them, presentations of images merged in from another label (`--same`: re-captures) */
  recaptured_presentations: number;
  with_second_capture: number;
  second_capture: string;
  draws: number;
  genuine_evidence_p05: number | null;
  genuine_evidence_p50: number | null;
}

/**
 * Fusion study at N = 1e6 on one probe set (presentations from image `probe_start` on): `enrol`
 * templates per palm, `frames` images per presentation fused by the best distance per user.
 * `fmr_at` / `fnmr_at` are measured per palm (best over templates and frames) at the distance
 * where one comparison's FMR is 1e-3 on the set: does fusion lower the genuine misses more than it
 * raises the impostor matches?
 */
export interface FusionRow {
  enrol: number;
  frames: number;
  probe_start: number;
  presentations: number;
  at_distance: number;
  fmr_at: number;
  fnmr_at: number;
  genuine_evidence_p05: number | null;
  fnir: number;
  fnir_step_up: number;
  step_up_rate: number;
  fpir: number;
  fpir_step_up: number;
  enrolled_as_another: number;
  enrolled_as_another_step_up: number;
}

export interface EvalExtra {
  failures: Array<{ file: string; reason: string }>;
  det: Array<{ far: number; frr: number }>;
  thresholdAtFar1e4: number;
  genuine: Float64Array;
  impostor: Float64Array;
}

/**
 * Template per file (or a failure reason), with the extraction time per image. `variants` are
 * extra templates of the same image (e.g. rotated ROIs, `extractRoiTemplates`): a pair then scores
 * the minimum over both directions of the rotation-tolerant distance (roi-rotation.ts), i.e. of
 * packedDistance(i's template, j's variants) and packedDistance(i's variants, j's template), so
 * that the score does not depend on which image of the pair is listed first.
 */
export type Extract = (
  file: string,
) => Promise<{ template: Uint8Array; variants?: Uint8Array[]; hand?: CaptureHand } | { reason: string }>;

/** An extraction's AppError as a reason to count (the pipeline's reason, or its message); anything else is rethrown. */
export function extractionFailure(err: unknown): { reason: string } {
  if (err instanceof AppError) return { reason: String(err.details.reason ?? err.message) };
  throw err;
}

export interface EvalOptions {
  /** Upper bound on impostor comparisons; beyond it a fixed stride samples them. */
  maxImpostorPairs?: number;
  distance?: (a: Uint32Array, ao: number, b: Uint32Array, bo: number) => number;
  onProgress?: (stage: 'extract' | 'match', done: number, total: number) => void;
  /** The deployed decision threshold on the similarity score (score = 1 − 2 × distance). */
  operatingThreshold?: number;
  /** The extraction reports each capture's hand side (whole frames): count the undecided ones. */
  sides?: boolean;
  /** Seeds the bootstrap of the confidence intervals (deterministic reports). */
  seed?: number;
  /** Open-set identification through the shared decision (open-set.ts); off by default. */
  openSet?: {
    policy?: Partial<IdentificationPolicy>;
    galleries?: number[];
    /** draws of the stranger candidates per genuine presentation (default 64) */
    draws?: number;
    /** also the fusion study (more templates per palm, more frames per presentation) */
    fusion?: boolean;
    /** strangers beyond the set from this model instead of the set's tail fit (sensitivity) */
    truth?: { p: number; dof: number };
    /** the shipped impostor model of the set's template coding (default DEFAULT_POLICY's, `wide`) */
    shipped?: ImpostorModel;
  };
}

/** The hand of a palm folder (`0051/l` → `l`), undefined where the set does not file hands apart. */
export function sideOf(subject: string): string | undefined {
  const m = /\/(l|r|left|right)([ _-]?(hand|palm))?$/i.exec(subject);
  return m ? m[1]!.toLowerCase()[0] : undefined;
}

/** The user a palm folder belongs to: `0051/l` and `0051/r` are one person's two hands. */
export function personOf(subject: string): string {
  const m = /^(.*)\/(l|r|left|right)([ _-]?(hand|palm))?$/i.exec(subject);
  return m ? m[1]! : subject;
}

/**
 * CPU time of this process in ms. Timings use it rather than wall time so that a shared,
 * busy machine reports what one dedicated core would take (they agree on an idle machine).
 */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

export async function evaluate(
  dataset: Dataset,
  extract: Extract,
  options: EvalOptions = {},
): Promise<{ report: EvalReport; extra: EvalExtra }> {
  // a subject's last `recaptures` files came from labels merged into it (`--same`)
  const files = dataset.subjects.flatMap((s, si) =>
    s.files.map((file, k) => ({ file, subject: si, recapture: k >= s.files.length - (s.recaptures ?? 0) })),
  );
  const packed: Array<{ subject: number; recapture: boolean; words: Uint32Array; variants: Uint32Array[] }> =
    [];
  const failures: EvalExtra['failures'] = [];
  const extractMs: number[] = [];
  let unknownSide = 0;
  for (const [i, f] of files.entries()) {
    const t0 = cpuMs();
    let result: Awaited<ReturnType<Extract>>;
    try {
      result = await extract(f.file);
    } catch (err) {
      result = { reason: err instanceof Error ? err.message : String(err) };
    }
    extractMs.push(cpuMs() - t0);
    if ('template' in result) {
      if (result.hand === 'unknown') unknownSide++;
      packed.push({
        subject: f.subject,
        recapture: f.recapture,
        words: packTemplate(decodeTemplate(result.template)),
        variants: (result.variants ?? []).map((v) => packTemplate(decodeTemplate(v))),
      });
    } else failures.push({ file: f.file, reason: result.reason });
    options.onProgress?.('extract', i + 1, files.length);
  }
  const n = packed.length;
  const all = new Uint32Array(n * PACKED_WORDS);
  for (const [i, p] of packed.entries()) all.set(p.words, i * PACKED_WORDS);
  // probe-side codes per image, [template, ...variants], padded with the template to a fixed count
  const per = 1 + Math.max(0, ...packed.map((p) => p.variants.length));
  const probes = per > 1 && !options.distance ? new Uint32Array(n * per * PACKED_WORDS) : null;
  if (probes)
    for (const [i, p] of packed.entries())
      for (let k = 0; k < per; k++)
        probes.set(k === 0 ? p.words : (p.variants[k - 1] ?? p.words), (i * per + k) * PACKED_WORDS);
  /** the pair's distance exactly as the loop below computes it (earlier image first) */
  const pairDistance = (a: number, b: number): number => {
    const i = Math.min(a, b);
    const j = Math.max(a, b);
    if (!probes) return (options.distance ?? packedDistance)(all, i * PACKED_WORDS, all, j * PACKED_WORDS);
    let d = variantMatcher(all, i * PACKED_WORDS)(probes, j * per * PACKED_WORDS, per);
    for (let k = 1; k < per; k++)
      d = Math.min(d, probeMatcher(probes, (i * per + k) * PACKED_WORDS)(all, j * PACKED_WORDS));
    return d;
  };
  const genuine: number[] = [];
  const impostor: number[] = [];
  const genuineSubject: number[] = [];
  const impostorSubject: number[] = [];
  const totalPairs = (n * (n - 1)) / 2;
  const maxImp = options.maxImpostorPairs ?? 5_000_000;
  let impostorTotal = 0;
  for (let i = 0; i < n; i++)
    for (let j = i + 1; j < n; j++) if (packed[i]!.subject !== packed[j]!.subject) impostorTotal++;
  const stride = Math.max(1, Math.ceil(impostorTotal / maxImp));
  let impIndex = 0;
  let done = 0;
  const matchStart = cpuMs();
  let matches = 0;
  for (let i = 0; i < n; i++) {
    const rotated = probes ? variantMatcher(all, i * PACKED_WORDS) : null;
    // i's own variants against j's template: the other direction
    const reverse = probes
      ? Array.from({ length: per - 1 }, (_, k) => probeMatcher(probes, (i * per + k + 1) * PACKED_WORDS))
      : [];
    for (let j = i + 1; j < n; j++) {
      const same = packed[i]!.subject === packed[j]!.subject;
      if (!same && impIndex++ % stride !== 0) continue;
      let d = rotated
        ? rotated(probes!, j * per * PACKED_WORDS, per)
        : (options.distance ?? packedDistance)(all, i * PACKED_WORDS, all, j * PACKED_WORDS);
      for (const m of reverse) d = Math.min(d, m(all, j * PACKED_WORDS));
      matches++;
      (same ? genuine : impostor).push(d);
      (same ? genuineSubject : impostorSubject).push(packed[i]!.subject);
    }
    done += n - i - 1;
    options.onProgress?.('match', done, totalPairs);
  }
  const matchUs = ((cpuMs() - matchStart) * 1000) / Math.max(1, matches);
  const round = (x: number, d = 6) => Number(x.toFixed(d));
  const reasons: Record<string, number> = {};
  for (const f of failures) reasons[f.reason] = (reasons[f.reason] ?? 0) + 1;
  const report: EvalReport = {
    subjects: dataset.subjects.length,
    images: files.length,
    enrolled: n,
    unknown_side: options.sides ? unknownSide : null,
    fta: files.length === 0 ? 0 : round(failures.length / files.length),
    failure_reasons: Object.fromEntries(Object.entries(reasons).sort((a, b) => b[1] - a[1])),
    genuine_pairs: genuine.length,
    impostor_pairs: impostor.length,
    eer: null,
    frr_at_far_1e3: null,
    frr_at_far_1e4: null,
    eer_ci95: null,
    frr_at_far_1e3_ci95: null,
    frr_at_far_1e4_ci95: null,
    min_far: impostor.length === 0 ? null : round(1 / impostor.length, 9),
    operating_point: null,
    extract_ms_p50: extractMs.length === 0 ? 0 : round(percentile(extractMs, 0.5), 3),
    match_us_p50: round(matchUs, 3),
  };
  const extra: EvalExtra = {
    failures,
    det: [],
    thresholdAtFar1e4: Number.NaN,
    genuine: Float64Array.from(genuine),
    impostor: Float64Array.from(impostor),
  };
  if (genuine.length === 0 || impostor.length === 0) return { report, extra };
  const rates = errorRates(genuine, impostor);
  const pairs = { genuine, genuineSubject, impostor, impostorSubject };
  const random = seededRandom(options.seed ?? 19795);
  const ci = (threshold: number, which: 'frr' | 'mean'): [number, number] => {
    const i = subjectBootstrap(pairs, threshold, random)[which];
    return [round(i.lo), round(i.hi)];
  };
  report.eer = round(rates.eer);
  report.frr_at_far_1e3 = round(rates.frrAtFar(1e-3));
  report.frr_at_far_1e4 = round(rates.frrAtFar(1e-4));
  report.eer_ci95 = ci(rates.eerThreshold, 'mean');
  report.frr_at_far_1e3_ci95 = ci(rates.thresholdAtFar(1e-3), 'frr');
  report.frr_at_far_1e4_ci95 = ci(rates.thresholdAtFar(1e-4), 'frr');
  if (options.operatingThreshold !== undefined) {
    // accept when score ≥ threshold, i.e. distance ≤ (1 − threshold) / 2
    const t = (1 - options.operatingThreshold) / 2 + 1e-12;
    report.operating_point = {
      threshold: options.operatingThreshold,
      far: round(impostor.filter((d) => d < t).length / impostor.length),
      frr: round(genuine.filter((d) => d >= t).length / genuine.length),
    };
  }
  extra.det = rates.det;
  extra.thresholdAtFar1e4 = rates.thresholdAtFar(1e-4);
  if (options.openSet) {
    const o = options.openSet;
    const fit = fitImpostorModel(impostor);
    report.impostor_model = fit;
    // the set's enrolled images per palm, in capture order, and a cache of the distances the
    // open-set protocol reads (probe images against the first templates of each palm)
    const palms = dataset.subjects.map((s) => ({
      person: personOf(s.name),
      images: [] as number[],
      side: sideOf(s.name),
      recaptured: new Set<number>(),
    }));
    for (const [i, p] of packed.entries()) {
      palms[p.subject]!.images.push(i);
      if (p.recapture) palms[p.subject]!.recaptured.add(i);
    }
    const kept = palms.filter((p) => p.images.length > 0);
    const memo = new Map<number, Float32Array>();
    const distance = (probe: number, enrolled: number) => {
      let col = memo.get(enrolled);
      if (!col) {
        col = new Float32Array(n).fill(Number.NaN);
        memo.set(enrolled, col);
      }
      let d = col[probe]!;
      if (Number.isNaN(d)) {
        d = pairDistance(probe, enrolled);
        col[probe] = d;
      }
      return d;
    };
    // the deployed model: the one given, else what gallery calibration would read in a large
    // gallery of such palms (the shipped model, or the set's own tail fit where that is stricter)
    const given = o.policy?.model;
    const calibrated = calibratedModel(
      o.shipped ?? DEFAULT_POLICY.model,
      fit.tail,
      OPEN_SET_GALLERIES[OPEN_SET_GALLERIES.length - 1]!,
      o.policy?.targetFpir ?? DEFAULT_POLICY.targetFpir,
    );
    const policy = resolvePolicy({ ...o.policy, model: given ?? calibrated.model });
    const modelSource = given ? 'given' : calibrated.source === 'gallery' ? 'set fit' : 'shipped';
    const draws = o.draws ?? 64;
    const truth = o.truth ?? fit.tail;
    const input = { palms: kept, distance, impostor: extra.impostor, truth };
    const main = openSet(input, { policy, galleries: o.galleries ?? OPEN_SET_GALLERIES, draws, random });
    report.open_set = main.rows;
    report.open_set_protocol = {
      target_fpir: policy.targetFpir,
      margin: policy.margin,
      step_up_window: policy.stepUpWindow,
      model: policy.model,
      model_source: modelSource,
      truth,
      presentations: main.presentations,
      recaptured_presentations: main.recaptured_presentations,
      with_second_capture: main.with_second_capture,
      second_capture: main.second_capture,
      draws,
      genuine_evidence_p05: main.genuine_evidence_p05,
      genuine_evidence_p50: main.genuine_evidence_p50,
    };
    if (o.fusion)
      report.open_set_fusion = fusionStudy(kept, distance, extra.impostor, truth, policy, draws, random);
  }
  return { report, extra };
}

/** The fusion study of `FusionRow`: one probe set, more templates per palm or more frames per presentation. */
function fusionStudy(
  palms: OpenSetPalm[],
  distance: (probe: number, enrolled: number) => number,
  impostor: Float64Array,
  truth: { p: number; dof: number },
  policy: IdentificationPolicy,
  draws: number,
  random: () => number,
): FusionRow[] {
  const sizes = palms.map((p) => p.images.length).sort((a, b) => a - b);
  const median = sizes[Math.floor(sizes.length / 2)] ?? 0;
  const start = median >= 7 ? 3 : 2;
  const sorted = Float64Array.from(impostor).sort();
  const at = sorted[Math.max(0, Math.round(1e-3 * sorted.length) - 1)] ?? 0;
  const configs: Array<[number, number]> = [[1, 1]];
  for (let k = 2; k <= start; k++) configs.push([k, 1]);
  for (let f = 2; f <= start; f++) configs.push([1, f]);
  configs.push([start, start]);
  const persons = palms.map((p) => p.person);
  return configs.map(([enrol, frames]) => {
    // per palm: best over its templates and the presentation's frames, genuine and impostor
    let fm = 0;
    let fmAll = 0;
    let fnm = 0;
    let fnmAll = 0;
    for (const palm of palms) {
      for (let i = start; i + frames <= palm.images.length; i += frames) {
        const probe = palm.images.slice(i, i + frames);
        for (const [v, other] of palms.entries()) {
          if (other.images.length < enrol) continue;
          let best = Number.POSITIVE_INFINITY;
          for (const t of other.images.slice(0, enrol))
            for (const im of probe) best = Math.min(best, distance(im, t));
          if (other === palm) {
            fnmAll++;
            if (best > at) fnm++;
          } else if (persons[v] !== palm.person) {
            fmAll++;
            if (best <= at) fm++;
          }
        }
      }
    }
    const r = openSet(
      { palms, distance, impostor, truth },
      { policy, galleries: [1e6], enrol, frames, probeStart: start, draws, random },
    );
    const row = r.rows[0]!;
    return {
      enrol,
      frames,
      probe_start: start,
      presentations: r.presentations,
      at_distance: Number(at.toFixed(5)),
      fmr_at: fmAll === 0 ? 0 : Number((fm / fmAll).toPrecision(4)),
      fnmr_at: fnmAll === 0 ? 0 : Number((fnm / fnmAll).toPrecision(4)),
      genuine_evidence_p05: r.genuine_evidence_p05,
      fnir: row.fnir,
      fnir_step_up: row.fnir_step_up,
      step_up_rate: row.step_up_rate,
      fpir: row.fpir,
      fpir_step_up: row.fpir_step_up,
      enrolled_as_another: row.enrolled_as_another,
      enrolled_as_another_step_up: row.enrolled_as_another_step_up,
    };
  });
}
