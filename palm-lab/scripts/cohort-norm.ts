/**
 * Cohort (Z-) normalisation of the probe's distances, measured at N = 1e6 through `palm eval`'s
 * open-set protocol (issue #24; docs/lab/identification.md "Cohort normalisation").
 *
 * Each probe image's distance d to an enrolled image is replaced by p* + s* · (d − m) / s, where m
 * and s are the mean and standard deviation of the probe's distances to a cohort of other people's
 * images and (p*, s*) the deployed impostor model's mean and sd (so unnormalised and normalised
 * scores share a scale). Three scorings, each read with the impostor model fitted on its own tail
 * (so every row's FPIR sits at the target and the FNIR figures compare at equal FPIR):
 * - `raw`: the matcher's distance;
 * - `cohort: all others`: the cohort is every image of every other identity of the set. On a
 *   small set that cohort holds the probe's look-alike, which a server's cohort (a sample of a large
 *   gallery) would almost never hold: optimistic;
 * - `cohort: without the pair`: for each pair, the cohort leaves out both identities of the pair
 *   (leave-two-identities-out), as a stranger's look-alike would be absent from a server's cohort.
 *   This is the figure a deployment could expect.
 *
 * usage: tsx palm-lab/scripts/cohort-norm.ts <dir> --sensor <profile> [--same a=b,…] [--cache <dir>]
 */
import { seededRandom } from '@palmid/firmware-sim/rng';
import { isSensorName } from '@palmid/palm/capture/sensor-profiles';
import { DEFAULT_IMPOSTOR_MODEL, type ImpostorModel } from '@palmid/palm/decision';
import { fitImpostorModel } from '@palmid/palm/impostor-fit';
import { PACKED_WORDS, packedDistance, packTemplate } from '@palmid/palm/match';
import { decodeTemplate } from '@palmid/palm/template';
import { loadSets, templateExtract } from '../src/calibrate/common.ts';
import { sameList } from '../src/eval/command.ts';
import { personOf, sideOf } from '../src/eval/evaluate.ts';
import { type OpenSetPalm, openSet } from '../src/eval/open-set.ts';

function usage(message: string): never {
  console.error(
    `error: ${message}\nusage: tsx palm-lab/scripts/cohort-norm.ts <dir> --sensor <profile> [--same a=b,…] [--cache <dir>]`,
  );
  process.exit(2);
}

const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) usage(`${name} needs a value`);
  args.splice(i, 2);
  return v;
};
if (args.includes('--help') || args.includes('-h')) {
  console.log(
    'usage: tsx palm-lab/scripts/cohort-norm.ts <dir> --sensor <profile> [--same a=b,…] [--cache <dir>]',
  );
  process.exit(0);
}
const sensor = option('--sensor');
const sameArg = option('--same');
const cache = option('--cache');
if (!sensor || !isSensorName(sensor)) usage('give --sensor <profile> (see `npm run palm -- eval --help`)');
if (args.length !== 1) usage('give one dataset folder');
let same: ReturnType<typeof sameList> = [];
try {
  same = sameArg ? sameList(sameArg) : [];
} catch (err) {
  usage(err instanceof Error ? err.message : String(err));
}
const o = { cache, sensors: [sensor], same };
let sets: Awaited<ReturnType<typeof loadSets>>;
try {
  sets = await loadSets(args, o);
} catch (err) {
  usage(err instanceof Error ? err.message : String(err));
}
const set = sets[0]!;
const extract = templateExtract(set, o);

// every image's template, filed per palm (identity folder), capture order
const person: string[] = [];
const words: Uint32Array[] = [];
const palms: OpenSetPalm[] = set.dataset.subjects.map((s) => ({
  person: personOf(s.name),
  side: sideOf(s.name),
  images: [],
}));
let done = 0;
const total = set.dataset.subjects.reduce((a, s) => a + s.files.length, 0);
for (const [si, s] of set.dataset.subjects.entries())
  for (const f of s.files) {
    const r = await extract(f);
    if ('template' in r) {
      palms[si]!.images.push(words.length);
      person.push(personOf(s.name));
      words.push(packTemplate(decodeTemplate(r.template)));
    }
    process.stderr.write(`\rextract ${++done}/${total}`);
  }
const n = words.length;
const all = new Uint32Array(n * PACKED_WORDS);
for (const [i, w] of words.entries()) all.set(w, i * PACKED_WORDS);
const D = new Float32Array(n * n);
for (let i = 0; i < n; i++) {
  for (let j = i + 1; j < n; j++) {
    const d = packedDistance(all, i * PACKED_WORDS, all, j * PACKED_WORDS);
    D[i * n + j] = d;
    D[j * n + i] = d;
  }
  if (i % 64 === 0 || i === n - 1) process.stderr.write(`\rmatch ${i + 1}/${n}      `);
}
process.stderr.write('\n');

// per image and identity: sums of d and d², so that any identities can be left out of a cohort
const persons = [...new Set(person)];
const index = new Map(persons.map((p, k) => [p, k]));
const P = persons.length;
const s1 = new Float64Array(n * P);
const s2 = new Float64Array(n * P);
const c1 = new Float64Array(n * P);
// and over every other image (t1, t2: sums of d and d²; tc: how many)
const t1 = new Float64Array(n);
const t2 = new Float64Array(n);
const tc = new Float64Array(n).fill(n - 1);
for (let i = 0; i < n; i++)
  for (let j = 0; j < n; j++) {
    if (i === j) continue;
    const d = D[i * n + j]!;
    const k = i * P + index.get(person[j]!)!;
    s1[k] = s1[k]! + d;
    s2[k] = s2[k]! + d * d;
    c1[k] = c1[k]! + 1;
    t1[i] = t1[i]! + d;
    t2[i] = t2[i]! + d * d;
  }
const M: ImpostorModel = DEFAULT_IMPOSTOR_MODEL;
const pStar = M.p;
const sStar = Math.sqrt((M.p * (1 - M.p)) / M.dof);
/** the probe's distance normalised by its cohort, leaving out its own identity and, if asked, the other's */
const normalised = (probe: number, other: number, leaveOther: boolean): number => {
  const a = index.get(person[probe]!)!;
  const b = index.get(person[other]!)!;
  let x = t1[probe]! - s1[probe * P + a]!;
  let xx = t2[probe]! - s2[probe * P + a]!;
  let c = tc[probe]! - c1[probe * P + a]!;
  if (leaveOther && b !== a) {
    x -= s1[probe * P + b]!;
    xx -= s2[probe * P + b]!;
    c -= c1[probe * P + b]!;
  }
  const m = x / c;
  const sd = Math.sqrt(Math.max(xx / c - m * m, 1e-12));
  return pStar + ((D[probe * n + other]! - m) / sd) * sStar;
};
const scorings: Array<[string, (probe: number, other: number) => number]> = [
  ['raw', (a, b) => D[a * n + b]!],
  ['cohort: all others', (a, b) => normalised(a, b, false)],
  ['cohort: without the pair', (a, b) => normalised(a, b, true)],
];
const kept = palms.filter((p) => p.images.length > 0);
console.log(
  `${args[0]} (${sensor}): ${P} identities, ${n} images; each row read with its own tail fit (FPIR at the target), N = 1e6, target 1e-4`,
);
console.log(
  'scoring                    tail fit p / dof   FNIR one capture / with step-up, 1 template   3 templates',
);
for (const [label, distance] of scorings) {
  const impostor: number[] = [];
  for (let i = 0; i < n; i++)
    for (let j = i + 1; j < n; j++) if (person[i] !== person[j]) impostor.push(distance(i, j));
  const fit = fitImpostorModel(impostor).tail;
  const cells = [1, 3].map((enrol) => {
    const r = openSet(
      { palms: kept, distance, impostor: Float64Array.from(impostor), truth: fit },
      { policy: { model: fit }, galleries: [1e6], enrol, draws: 32, random: seededRandom(19795) },
    );
    const row = r.rows[0]!;
    const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
    return `${pct(row.fnir)} / ${pct(row.fnir_step_up)} (${r.presentations})`;
  });
  console.log(
    `${label.padEnd(26)} ${`${fit.p} / ${fit.dof}`.padEnd(18)} ${cells[0]!.padEnd(44)} ${cells[1]}`,
  );
}
