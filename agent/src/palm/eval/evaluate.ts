import { PACKED_WORDS, packedDistance, packTemplate, probeMatcher } from '@palmid/shared/palm/match.ts';
import { decodeTemplate } from '@palmid/shared/palm/template.ts';
import { variantMatcher } from '../roi-rotation.ts';
import type { Dataset } from './dataset.ts';
import { errorRates, percentile } from './metrics.ts';

export interface EvalReport {
  subjects: number;
  images: number;
  genuine_pairs: number;
  impostor_pairs: number;
  eer: number;
  frr_at_far_1e3: number;
  frr_at_far_1e4: number;
  extract_ms_p50: number;
  match_us_p50: number;
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
) => Promise<{ template: Uint8Array; variants?: Uint8Array[] } | { reason: string }>;

export interface EvalOptions {
  /** Upper bound on impostor comparisons; beyond it a fixed stride samples them. */
  maxImpostorPairs?: number;
  distance?: (a: Uint32Array, ao: number, b: Uint32Array, bo: number) => number;
  onProgress?: (stage: 'extract' | 'match', done: number, total: number) => void;
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
  const files = dataset.subjects.flatMap((s, si) => s.files.map((file) => ({ file, subject: si })));
  const packed: Array<{ subject: number; words: Uint32Array; variants: Uint32Array[] }> = [];
  const failures: EvalExtra['failures'] = [];
  const extractMs: number[] = [];
  for (const [i, f] of files.entries()) {
    const t0 = cpuMs();
    let result: Awaited<ReturnType<Extract>>;
    try {
      result = await extract(f.file);
    } catch (err) {
      result = { reason: err instanceof Error ? err.message : String(err) };
    }
    extractMs.push(cpuMs() - t0);
    if ('template' in result)
      packed.push({
        subject: f.subject,
        words: packTemplate(decodeTemplate(result.template)),
        variants: (result.variants ?? []).map((v) => packTemplate(decodeTemplate(v))),
      });
    else failures.push({ file: f.file, reason: result.reason });
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
  const genuine: number[] = [];
  const impostor: number[] = [];
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
    }
    done += n - i - 1;
    options.onProgress?.('match', done, totalPairs);
  }
  const matchUs = ((cpuMs() - matchStart) * 1000) / Math.max(1, matches);
  if (genuine.length === 0 || impostor.length === 0) {
    throw new Error('not enough templates for genuine and impostor pairs');
  }
  const rates = errorRates(genuine, impostor);
  const round = (x: number, d = 6) => Number(x.toFixed(d));
  return {
    report: {
      subjects: dataset.subjects.length,
      images: files.length,
      genuine_pairs: genuine.length,
      impostor_pairs: impostor.length,
      eer: round(rates.eer),
      frr_at_far_1e3: round(rates.frrAtFar(1e-3)),
      frr_at_far_1e4: round(rates.frrAtFar(1e-4)),
      extract_ms_p50: round(percentile(extractMs, 0.5), 3),
      match_us_p50: round(matchUs, 3),
    },
    extra: {
      failures,
      det: rates.det,
      thresholdAtFar1e4: rates.thresholdAtFar(1e-4),
      genuine: Float64Array.from(genuine),
      impostor: Float64Array.from(impostor),
    },
  };
}
