/**
 * Palm pipeline benchmark: ROI and whole-frame extraction (ms), 1:1 matching (µs), 1:N identify
 * at 10k / 100k / 1M enrolled templates with the two-stage gallery and the naive exhaustive scan
 * side by side, rank-1 recall per ROI style (two-stage vs exhaustive), and memory per template. One core (single thread); times are
 * CPU time of the process, so neighbours on a shared machine do not inflate them.
 *
 * Open-set rows (issue #24): at each gallery size, strangers (palms never enrolled) and enrolled
 * two-hand users go through the server's own decision (matching/identify.ts `identifyProbes`,
 * PALMID_TARGET_FPIR's default): FPIR and FNIR at the policy's bar for one capture and with the
 * step-up to the other hand, latency p50/p99 of one capture and of the fused two-hand decision.
 * The fillers' impostor statistics against the probes are fitted like a real set's
 * (`fitImpostorModel`) and printed beside the shared model fitted on real palms: a filler easier
 * to reject than a real stranger would hide false matches.
 *
 *   npm run bench -- palm [--max 1000000] [--probes 20] [--strangers 200]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { renderRoi } from '@palmid/firmware-sim/synth/roi';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { extractRoiTemplate, extractRoiTemplates } from '@palmid/palm/capture/roi-template';
import {
  DEFAULT_IMPOSTOR_MODEL,
  DEFAULT_POLICY,
  decisionBar,
  distanceForEvidence,
  fmrAt,
  type ImpostorModel,
} from '@palmid/palm/decision';
import { createExhaustiveGallery } from '@palmid/palm/gallery/exhaustive';
import { DEFAULT_CANDIDATES, MemoryGallery } from '@palmid/palm/gallery/gallery';
import { identifyProbes, type Probe } from '@palmid/palm/gallery/identify';
import { DESCRIPTOR_BYTES, stage1SimdAvailable } from '@palmid/palm/gallery/stage1';
import { fitImpostorModel } from '@palmid/palm/impostor-fit';
import {
  compareTemplates,
  PACKED_WORDS,
  packedDistance,
  packedDistanceJs,
  packTemplate,
  probeMatcher,
} from '@palmid/palm/match';
import { simdAvailable } from '@palmid/palm/match-simd';
import { decodeTemplate, encodeTemplate, TEMPLATE_BYTES } from '@palmid/palm/template';

const args = process.argv.slice(2);
const flag = (name: string, def: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const MAX = flag('max', 1_000_000);
const PROBES = flag('probes', 20);
const IDENTITIES = flag('identities', 100);
const STRANGERS = flag('strangers', 200);

/**
 * CPU time of this process in ms: the bench machine is shared, and wall time under contention
 * measures the neighbours; CPU time is what one dedicated core would take.
 */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const results: Record<string, unknown> = {
  date: new Date().toISOString(),
  node: process.version,
  cpu_load: (await import('node:os')).loadavg()[0],
};

// --- extraction ---------------------------------------------------------------
const enrol: Uint8Array[] = [];
const probes: Uint8Array[] = [];
const roiMs: number[] = [];
for (let i = 0; i < IDENTITIES; i++) {
  for (const session of [1, 2] as const) {
    const img = renderRoi({ identity: `bench-${i}`, style: 'contactless', session, sample: 0 });
    const t0 = cpuMs();
    const t = await extractRoiTemplate(img);
    roiMs.push(cpuMs() - t0);
    (session === 1 ? enrol : probes).push(t);
  }
}
// `eval --roi`'s extraction: the plain template plus the rotated and zoomed variants, one batch
const variantMs: number[] = [];
for (let i = 0; i < 40; i++) {
  const img = renderRoi({ identity: `bench-${i}`, style: 'contactless', session: 2, sample: 1 });
  const t0 = cpuMs();
  await extractRoiTemplates(img);
  variantMs.push(cpuMs() - t0);
}
const frameMs: number[] = [];
for (let i = 0; i < 30; i++) {
  const f = await renderPalm({ identity: `bench-frame-${i % 5}`, hand: 'right', capture: i });
  const t0 = cpuMs();
  await processCapture(f);
  frameMs.push(cpuMs() - t0);
}
results.extract_roi_ms_p50 = median(roiMs.slice(10));
results.extract_roi_variants_ms_p50 = median(variantMs.slice(5));
results.process_capture_ms_p50 = median(frameMs.slice(5));

// --- 1:1 ----------------------------------------------------------------------
// The same pairs through the plain-JS reference and the WebAssembly SIMD kernel (what
// `packedDistance` runs when the engine has SIMD), and through a one-probe matcher (1:N stage 2).
const packed = enrol.map((t) => packTemplate(decodeTemplate(t)));
let sink = 0;
let mins: number[] = []; // fastest batch of each variant in the last perPairUs call
/** µs per pair, p50 over batches; the variants' batches alternate so that load drift hits all alike. */
function perPairUs(variants: Array<[(i: number) => number, number]>, batches: number): number[] {
  const us: number[][] = variants.map(() => []);
  for (let b = 0; b < batches; b++)
    for (const [v, [distance, pairs]] of variants.entries()) {
      const t0 = cpuMs();
      for (let i = 0; i < pairs; i++) sink += distance(i);
      us[v]!.push(((cpuMs() - t0) * 1000) / pairs);
    }
  mins = us.map((xs) => Math.min(...xs));
  return us.map(median);
}
const pa = (i: number) => packed[i % packed.length]!;
const pb = (i: number) => packed[(i * 7 + 1) % packed.length]!;
let mismatches = 0;
for (let i = 0; i < 2000; i++)
  if (packedDistance(pa(i), 0, pb(i), 0) !== packedDistanceJs(pa(i), 0, pb(i), 0)) mismatches++;
results.match_kernel = simdAvailable ? 'wasm-simd' : 'js (no WebAssembly SIMD)';
results.match_kernel_mismatches_of_2000 = mismatches;
const probeMatch = probeMatcher(packed[0]!);
const [jsUs, kernelUs, probeUs] = perPairUs(
  [
    [(i) => packedDistanceJs(pa(i), 0, pb(i), 0), 1000],
    [(i) => packedDistance(pa(i), 0, pb(i), 0), 10_000],
    [(i) => probeMatch(pb(i), 0), 10_000],
  ],
  21,
);
results.match_js_us_p50 = jsUs;
results.match_us_p50 = kernelUs;
results.match_probe_us_p50 = probeUs;
results.match_us_min = mins[1];
results.match_speedup = Number((jsUs! / kernelUs!).toFixed(1));
const full: number[] = [];
for (let b = 0; b < 5; b++) {
  const t0 = cpuMs();
  for (let i = 0; i < 1000; i++)
    sink += compareTemplates(enrol[i % enrol.length]!, enrol[(i + 3) % enrol.length]!);
  full.push(((cpuMs() - t0) * 1000) / 1000);
}
results.match_with_decode_us_p50 = median(full);

// --- 1:N ----------------------------------------------------------------------
// Genuine probes of the three ROI styles (enrol session 1, probe session 2) among impostor filler.
// Filler palms are mosaics: each 8 × 8 tile from a template of one of POOL identities that are
// neither enrolled nor probed, so block statistics are those of real palms (random signatures,
// the old filler, made the first stage look far better than it is on real impostors).
const STYLES = ['contactless', 'contact', 'vein'] as const;
const POOL = flag('pool', 30);
const styleSets = new Map<string, { enrol: Uint8Array[]; probes: Uint8Array[] }>();
styleSets.set('contactless', { enrol, probes });
const pool: ReturnType<typeof decodeTemplate>[] = [];
for (const style of STYLES) {
  if (!styleSets.has(style)) {
    const set = { enrol: [] as Uint8Array[], probes: [] as Uint8Array[] };
    for (let i = 0; i < IDENTITIES; i++) {
      set.enrol.push(
        await extractRoiTemplate(
          renderRoi({ identity: `bench-${style}-${i}`, style, session: 1, sample: 0 }),
        ),
      );
      set.probes.push(
        await extractRoiTemplate(
          renderRoi({ identity: `bench-${style}-${i}`, style, session: 2, sample: 0 }),
        ),
      );
    }
    styleSets.set(style, set);
  }
  for (let i = 0; i < POOL; i++)
    pool.push(
      decodeTemplate(
        await extractRoiTemplate(
          renderRoi({ identity: `bench-pool-${style}-${i}`, style, session: 1, sample: 0 }),
        ),
      ),
    );
}
// open set: a left palm for each contactless user (the step-up's other hand), and strangers with
// both hands, never enrolled
const leftEnrol: Uint8Array[] = [];
const leftProbes: Uint8Array[] = [];
for (let i = 0; i < IDENTITIES; i++) {
  leftEnrol.push(
    await extractRoiTemplate(
      renderRoi({ identity: `bench-${i}-left`, style: 'contactless', session: 1, sample: 0 }),
    ),
  );
  leftProbes.push(
    await extractRoiTemplate(
      renderRoi({ identity: `bench-${i}-left`, style: 'contactless', session: 2, sample: 0 }),
    ),
  );
}
const strangers: Array<{ right: Uint8Array; left: Uint8Array }> = [];
for (let i = 0; i < STRANGERS; i++)
  strangers.push({
    right: await extractRoiTemplate(
      renderRoi({ identity: `bench-stranger-${i}`, style: 'contactless', session: 2, sample: 0 }),
    ),
    left: await extractRoiTemplate(
      renderRoi({ identity: `bench-stranger-${i}-left`, style: 'contactless', session: 2, sample: 0 }),
    ),
  });

let fillerSeed = 0x9e3779b9;
const FILLER = args.includes('--mosaic-fillers') ? 'mosaic' : 'palm';
const nextSeed = () => {
  fillerSeed ^= fillerSeed << 13;
  fillerSeed ^= fillerSeed >>> 17;
  fillerSeed ^= fillerSeed << 5;
  return fillerSeed >>> 0;
};
const reverseBits = (x: number) => {
  let r = 0;
  for (let i = 0; i < 32; i++) r = (r << 1) | ((x >>> i) & 1);
  return r >>> 0;
};
/**
 * A whole pool palm moved to a new identity: cyclic shifts of rows and columns beyond the matcher's
 * alignment search (4–28 cells) and optional flips of either axis, code and mask alike. It keeps a
 * palm's own structure (its lines' correlations across the grid), which mosaics of tiles from
 * several palms break: those are far easier to reject than a real stranger (see `filler_match`).
 */
function palmFiller(): Uint8Array {
  const src = pool[nextSeed() % pool.length]!;
  const t = nextSeed();
  const dy = 4 + (t % 25);
  const dx = 4 + ((t >>> 5) % 25);
  const flipRows = (t >>> 10) & 1;
  const flipCols = (t >>> 11) & 1;
  const move = (w: number) => {
    const v = flipCols ? reverseBits(w) : w >>> 0;
    return ((v << dx) | (v >>> (32 - dx))) >>> 0;
  };
  const code = new Uint32Array(6 * 32);
  const mask = new Uint32Array(32);
  for (let r = 0; r < 32; r++) {
    const from = flipRows ? 31 - r : r;
    const to = (from + dy) % 32;
    mask[to] = move(src.mask[r]!);
    for (let p = 0; p < 6; p++) code[p * 32 + to] = move(src.code[p * 32 + r]!);
  }
  return encodeTemplate({ ...src, code, mask });
}
function filler(): Uint8Array {
  return FILLER === 'palm' ? palmFiller() : mosaicFiller();
}
function mosaicFiller(): Uint8Array {
  const code = new Uint32Array(6 * 32);
  const mask = new Uint32Array(32);
  for (let tile = 0; tile < 16; tile++) {
    fillerSeed ^= fillerSeed << 13;
    fillerSeed ^= fillerSeed >>> 17;
    fillerSeed ^= fillerSeed << 5;
    const src = pool[(fillerSeed >>> 0) % pool.length]!;
    const bits = 0xff << ((tile % 4) * 8);
    for (let r = (tile >> 2) * 8; r < (tile >> 2) * 8 + 8; r++) {
      mask[r] = (mask[r]! & ~bits) | (src.mask[r]! & bits);
      for (let p = 0; p < 6; p++)
        code[p * 32 + r] = (code[p * 32 + r]! & ~bits) | (src.code[p * 32 + r]! & bits);
    }
  }
  return encodeTemplate({ ...pool[0]!, code, mask });
}

/** nearest-rank percentile of ms values */
const pctl = (xs: number[], q: number) =>
  xs.length === 0 ? 0 : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

/**
 * Fillers against real palms: the distances of the probes (genuine users' and strangers') to 1 000
 * fillers, and to the other enrolled synthetic palms, fitted as a set's impostors are (mean = p,
 * dof, tail fit), beside the shared model fitted on real palms. FMR at the N = 1e6 bar under each
 * says what a filler does to the open-set rows.
 */
function fillerMatch(): Record<string, unknown> {
  const probesAll = [...genuine.map((g) => g.probe), ...strangers.map((x) => x.right)];
  const fillers = Array.from({ length: 1000 }, () => packTemplate(decodeTemplate(filler())));
  const other = Array.from({ length: 300 }, () =>
    packTemplate(decodeTemplate(FILLER === 'palm' ? mosaicFiller() : palmFiller())),
  );
  const dOther: number[] = [];
  const dFill: number[] = [];
  const dSynth: number[] = [];
  const enrolPacked = [...styleSets.values()].flatMap((st) =>
    st.enrol.map((t) => packTemplate(decodeTemplate(t))),
  );
  for (const [pi, t] of probesAll.entries()) {
    const m = probeMatcher(packTemplate(decodeTemplate(t)));
    for (const f of fillers) dFill.push(m(f, 0));
    for (const f of other) dOther.push(m(f, 0));
    for (const [ei, e] of enrolPacked.entries()) if (ei !== pi) dSynth.push(m(e, 0));
  }
  const fill = fitImpostorModel(dFill);
  const synth = fitImpostorModel(dSynth);
  const alt = fitImpostorModel(dOther);
  const bar = distanceForEvidence(decisionBar(1e6, DEFAULT_POLICY.targetFpir), DEFAULT_IMPOSTOR_MODEL);
  const at = (m: ImpostorModel) => Number(fmrAt(bar, m).toPrecision(3));
  return {
    filler: FILLER,
    pairs_filler: dFill.length,
    filler_moments: fill.moments,
    filler_tail: fill.tail,
    [`${FILLER === 'palm' ? 'mosaic' : 'palm'}_filler_tail (not used)`]: alt.tail,
    synthetic_palms_moments: synth.moments,
    synthetic_palms_tail: synth.tail,
    real_model: DEFAULT_IMPOSTOR_MODEL,
    bar_distance_1e6: Number(bar.toFixed(4)),
    fmr_at_bar_filler: at(fill.tail),
    [`fmr_at_bar_${FILLER === 'palm' ? 'mosaic' : 'palm'}_filler`]: at(alt.tail),
    fmr_at_bar_synthetic_palms: at(synth.tail),
    fmr_at_bar_real_model: at(DEFAULT_IMPOSTOR_MODEL),
    filler_as_hard_as_real: fmrAt(bar, fill.tail) >= fmrAt(bar, DEFAULT_IMPOSTOR_MODEL),
  };
}

/** FPIR and FNIR through the server's decision at gallery size n, one capture and with the step-up. */
function openSetRow(n: number): Record<string, number | string> {
  const one: number[] = [];
  const fused: number[] = [];
  let sMatch = 0;
  let sFlow = 0;
  let sStep = 0;
  for (const st of strangers) {
    const right: Probe = { template: st.right, hand: 'right' };
    const t0 = cpuMs();
    const o = identifyProbes(gallery, [right], { canStepUp: true });
    one.push(cpuMs() - t0);
    if (o.decision.kind === 'match') {
      sMatch++;
      sFlow++;
    } else if (o.decision.kind === 'step_up') {
      sStep++;
      const t1 = cpuMs();
      // as the server does: the first capture's search is kept, only the other hand is searched
      const o2 = identifyProbes(gallery, [
        { template: st.left, hand: 'left' },
        { ...right, search: o.searches[0] },
      ]);
      fused.push(cpuMs() - t1);
      if (o2.decision.kind === 'match') sFlow++;
    }
  }
  let gOne = 0;
  let gFlow = 0;
  let gStep = 0;
  let gWrong = 0;
  for (let i = 0; i < IDENTITIES; i++) {
    const user = `u-contactless-${i}`;
    const right: Probe = { template: probes[i]!, hand: 'right' };
    const t0 = cpuMs();
    const o = identifyProbes(gallery, [right], { canStepUp: true });
    one.push(cpuMs() - t0);
    const d = o.decision;
    if (d.kind === 'match') {
      if (d.userId === user) {
        gOne++;
        gFlow++;
      } else gWrong++;
    } else if (d.kind === 'step_up') {
      gStep++;
      const t1 = cpuMs();
      const o2 = identifyProbes(gallery, [
        { template: leftProbes[i]!, hand: 'left' },
        { ...right, search: o.searches[0] },
      ]);
      fused.push(cpuMs() - t1);
      if (o2.decision.kind === 'match') {
        if (o2.decision.userId === user) gFlow++;
        else gWrong++;
      }
    }
  }
  // the fused path's latency on every genuine user, not only those asked
  // (the second request of a step-up: the first capture's search kept, the other hand searched)
  for (let i = 0; i < Math.min(IDENTITIES, 40); i++) {
    const right: Probe = { template: probes[i]!, hand: 'right' };
    const [first] = identifyProbes(gallery, [right], { canStepUp: true }).searches;
    const t1 = cpuMs();
    identifyProbes(gallery, [
      { template: leftProbes[i]!, hand: 'left' },
      { ...right, search: first },
    ]);
    fused.push(cpuMs() - t1);
  }
  const bar = decisionBar(gallery.handCount('right'), DEFAULT_POLICY.targetFpir);
  return {
    templates: n,
    gallery_right: gallery.handCount('right'),
    bar_decades: Number(bar.toFixed(2)),
    bar_distance: Number(distanceForEvidence(bar, DEFAULT_IMPOSTOR_MODEL).toFixed(4)),
    fpir: `${sMatch}/${strangers.length}`,
    fpir_step_up: `${sFlow}/${strangers.length}`,
    stranger_step_ups: `${sStep}/${strangers.length}`,
    fnir: Number((1 - gOne / IDENTITIES).toFixed(3)),
    fnir_step_up: Number((1 - gFlow / IDENTITIES).toFixed(3)),
    step_up_rate: Number((gStep / IDENTITIES).toFixed(3)),
    wrong_user: gWrong,
    one_capture_ms_p50: Number(pctl(one, 0.5).toFixed(2)),
    one_capture_ms_p99: Number(pctl(one, 0.99).toFixed(2)),
    two_hands_ms_p50: Number(pctl(fused, 0.5).toFixed(2)),
    two_hands_ms_p99: Number(pctl(fused, 0.99).toFixed(2)),
  };
}

const sizes = [10_000, 100_000, 1_000_000].filter((n) => n <= MAX);
const gallery = new MemoryGallery({ capacity: Math.max(...sizes) });
const exhaustive = createExhaustiveGallery();
const genuine: Array<{ style: string; userId: string; probe: Uint8Array }> = [];
for (const [style, set] of styleSets)
  for (const [i, t] of set.enrol.entries()) {
    const entry = {
      palmId: `p-${style}-${i}`,
      userId: `u-${style}-${i}`,
      hand: 'right' as const,
      template: t,
    };
    gallery.add(entry);
    exhaustive.add(entry);
    genuine.push({ style, userId: entry.userId, probe: set.probes[i]! });
  }
for (const [i, t] of leftEnrol.entries())
  gallery.add({ palmId: `p-left-${i}`, userId: `u-contactless-${i}`, hand: 'left', template: t });
let leftFilled = 0;
const rows: Array<Record<string, number | string>> = [];
const openRows: Array<Record<string, number | string>> = [];
const recallRows: Array<Record<string, number | string>> = [];
let filled = gallery.size;
const heapBefore = process.memoryUsage();
for (const n of sizes) {
  while (filled < n) {
    const t = filler();
    gallery.add({ palmId: `f${filled}`, userId: `fu${filled}`, hand: 'right', template: t });
    if (n <= 100_000)
      exhaustive.add({ palmId: `f${filled}`, userId: `fu${filled}`, hand: 'right', template: t });
    filled++;
  }
  // the left side holds a tenth as many fillers (memory): the step-up's search is the smaller one,
  // and the fused decision's gallery is the larger search (the right side's N)
  while (leftFilled < n / 10) {
    gallery.add({ palmId: `fl${leftFilled}`, userId: `flu${leftFilled}`, hand: 'left', template: filler() });
    leftFilled++;
  }
  if (n === sizes[0]) results.filler_match = fillerMatch();
  openRows.push(openSetRow(n));
  // two-stage: every genuine probe of every style (timed); exhaustive: all at 10k, PROBES per style
  // at 100k, none at 1M (too slow; its per-template cost is extrapolated below)
  const times: number[] = [];
  const found = new Map<string, { two: number; twoOfEx: number; ex: number; exTried: number; n: number }>();
  for (const style of STYLES) found.set(style, { two: 0, twoOfEx: 0, ex: 0, exTried: 0, n: 0 });
  const perStyle = new Map<string, number>();
  for (const g of genuine) {
    const f = found.get(g.style)!;
    const t0 = cpuMs();
    const hit = gallery.identify(g.probe);
    times.push(cpuMs() - t0);
    f.n++;
    const two = hit?.userId === g.userId;
    if (two) f.two++;
    const k = perStyle.get(g.style) ?? 0;
    perStyle.set(g.style, k + 1);
    if (n <= 10_000 || (n <= 100_000 && k < PROBES)) {
      f.exTried++;
      if (exhaustive.identify(g.probe)?.userId === g.userId) {
        f.ex++;
        if (two) f.twoOfEx++;
      }
    }
  }
  const naive: number[] = [];
  const naiveProbes = n <= 100_000 ? Math.min(PROBES, n <= 10_000 ? 20 : 3) : 0;
  for (let p = 0; p < naiveProbes; p++) {
    const t0 = cpuMs();
    exhaustive.identify(genuine[p]!.probe);
    naive.push(cpuMs() - t0);
  }
  // the naive scan is linear: at 1M, extrapolate from the measured per-template cost
  const naiveMs = naive.length ? median(naive) : ((results.match_us_p50 as number) * n) / 1000;
  rows.push({
    templates: n,
    identify_ms_p50: Number(median(times).toFixed(2)),
    identify_ms_max: Number(Math.max(...times).toFixed(2)),
    naive_ms_p50: Number(naiveMs.toFixed(1)),
    naive_measured: naive.length ? 'yes' : 'extrapolated',
    speedup: Number((naiveMs / median(times)).toFixed(0)),
  });
  for (const [style, f] of found)
    recallRows.push({
      templates: n,
      style,
      two_stage_rank1: Number((f.two / f.n).toFixed(3)),
      exhaustive_rank1: f.exTried ? Number((f.ex / f.exTried).toFixed(3)) : 'not run',
      exhaustive_probes: f.exTried,
      two_stage_of_exhaustive_hits: f.ex ? `${f.twoOfEx}/${f.ex}` : '—',
    });
}
const heapAfter = process.memoryUsage();
results.open_set = openRows;
results.identify = rows;
results.identify_recall = recallRows;
results.identify_candidates = DEFAULT_CANDIDATES;
results.stage1_kernel = stage1SimdAvailable ? 'wasm-simd' : 'js (no WebAssembly SIMD)';
results.template_bytes = TEMPLATE_BYTES;
results.gallery_bytes_per_template = PACKED_WORDS * 4 + DESCRIPTOR_BYTES + 2 + 1;
results.process_bytes_per_template_measured = Math.round(
  (heapAfter.arrayBuffers - heapBefore.arrayBuffers + heapAfter.heapUsed - heapBefore.heapUsed) /
    Math.max(1, filled),
);
results.sink = sink > 0;

console.table(rows);
console.table(recallRows);
console.table(openRows);
console.table(results.filler_match as Record<string, unknown>);
console.table({
  'extract ROI ms p50': results.extract_roi_ms_p50,
  'extract ROI with eval --roi variants ms p50': results.extract_roi_variants_ms_p50,
  'processCapture ms p50': results.process_capture_ms_p50,
  '1:1 kernel': results.match_kernel,
  '1:1 match µs p50 (JS reference)': results.match_js_us_p50,
  '1:1 match µs p50 (packedDistance)': results.match_us_p50,
  '1:1 match µs min batch (packedDistance)': results.match_us_min,
  '1:1 speed-up over JS': results.match_speedup,
  '1:1 one probe vs many µs p50': results.match_probe_us_p50,
  '1:1 kernel ≠ JS (of 2000 pairs)': results.match_kernel_mismatches_of_2000,
  '1:1 with decode µs p50': results.match_with_decode_us_p50,
  'template bytes': TEMPLATE_BYTES,
  'gallery bytes/template': results.gallery_bytes_per_template,
  '1:N first stage': results.stage1_kernel,
  '1:N shortlist (candidates)': results.identify_candidates,
  'load average (1 min)': results.cpu_load,
});
const out = join(dirname(fileURLToPath(import.meta.url)), 'results');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'palm.json'), JSON.stringify(results, null, 2));
console.log(`wrote ${join(out, 'palm.json')}`);
