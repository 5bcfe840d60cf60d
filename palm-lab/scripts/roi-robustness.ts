/**
 * Robustness of the `--roi` path: re-evaluates the EER with one perturbation at a time applied to
 * the session-2 images of a ROI set (files `2_*`, else the second half of each subject's files),
 * for the classic competitive code (baseline) and palmid. Protocol: session 1 is the gallery and
 * session 2 the probes, so genuine pairs are cross-session same-subject pairs and impostor pairs
 * cross-session different-subject pairs.
 * palmid is scored with the rotation-tolerant ROI distance: each probe is coded at the angles of a
 * set (`--angles`, sets separated by "/", default ROI_ROTATION_ANGLES; "0" is the plain distance)
 * and a pair keeps the minimum distance of the probe variants against the gallery's 0° template.
 * One column per set; the union of the angles is extracted once per probe image (rotations only:
 * no zoom variant, ROI_SCALE_VARIANTS).
 * usage: tsx palm-lab/scripts/roi-robustness.ts <roi-dir> [--only name,name] [--no-baseline] [--angles 0/0,-6,6]
 * e.g.   tsx palm-lab/scripts/make-roi-set.ts /tmp/r --style contactless --subjects 40 --per-session 3
 */
import { basename } from 'node:path';
import { type GrayImage, readImage } from '@palmid/palm/capture/image-io';
import { bilinear } from '@palmid/palm/capture/roi-input';
import { ROI_ROTATION_ANGLES, variantMatcher } from '@palmid/palm/capture/roi-rotation';
import { extractRoiTemplate, extractRoiTemplates } from '@palmid/palm/capture/roi-template';
import { PACKED_WORDS, type packedDistance, packTemplate } from '@palmid/palm/match';
import { decodeTemplate } from '@palmid/palm/template';
import { Command } from 'commander';
import sharp, { type Sharp } from 'sharp';
import { baselineDistance, baselineTemplate } from '../src/eval/baseline.ts';
import { listDataset } from '../src/eval/dataset.ts';
import { errorRates } from '../src/eval/metrics.ts';

type Perturb = (img: GrayImage) => GrayImage | Promise<GrayImage>;
interface Perturbation {
  name: string;
  apply: Perturb;
  /** Apply to both sessions (sizes: a database has one ROI size). */
  both?: boolean;
}

const clamp8 = (v: number) => Math.max(0, Math.min(255, Math.round(v)));

function mapPixels(img: GrayImage, f: (v: number, x: number, y: number) => number): GrayImage {
  const data = new Uint8Array(img.data.length);
  for (let y = 0; y < img.height; y++)
    for (let x = 0; x < img.width; x++)
      data[y * img.width + x] = clamp8(f(img.data[y * img.width + x]!, x, y));
  return { width: img.width, height: img.height, data };
}

/** Output pixel (x, y) samples the source at `src(x, y)` (bilinear, edges replicated). */
function warp(
  img: GrayImage,
  width: number,
  height: number,
  src: (x: number, y: number) => [number, number],
) {
  const data = new Uint8Array(width * height);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const [sx, sy] = src(x, y);
      data[y * width + x] = clamp8(bilinear(img, sx, sy));
    }
  return { width, height, data };
}

/** Rotation by `deg` and scaling by `s` about the centre, then a shift of (dx, dy) px. */
function affine(deg: number, s = 1, dx = 0, dy = 0): Perturb {
  const a = (deg * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  return (img) => {
    const cx = (img.width - 1) / 2;
    const cy = (img.height - 1) / 2;
    return warp(img, img.width, img.height, (x, y) => {
      const u = (x - dx - cx) / s;
      const v = (y - dy - cy) / s;
      return [cx + cos * u + sin * v, cy - sin * u + cos * v];
    });
  };
}

/** A sharp operation on a grey image; the result is forced back to one 8-bit channel. */
async function viaSharp(img: GrayImage, op: (s: Sharp) => Sharp): Promise<GrayImage> {
  const input = sharp(img.data, { raw: { width: img.width, height: img.height, channels: 1 } });
  const { data, info } = await sharp(await op(input).png().toBuffer())
    .toColourspace('b-w')
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 1 || data.length !== info.width * info.height) throw new Error('not grey');
  return { width: info.width, height: info.height, data: new Uint8Array(data) };
}

const gaussianBlur =
  (sigma: number): Perturb =>
  (img) =>
    viaSharp(img, (s) => s.blur(sigma));
/** JPEG round trip at `quality`. */
const jpeg =
  (quality: number): Perturb =>
  async (img) => {
    const buf = await sharp(img.data, { raw: { width: img.width, height: img.height, channels: 1 } })
      .jpeg({ quality })
      .toBuffer();
    return viaSharp({ width: 1, height: 1, data: new Uint8Array(1) }, () => sharp(buf));
  };
/** Resample to `n` × `n` the way a database tool would (sharp, Lanczos). */
const resize =
  (n: number): Perturb =>
  (img) =>
    viaSharp(img, (s) => s.resize(n, n, { fit: 'fill' }));

function seededNoise(sigma: number): Perturb {
  return (img) => {
    let s = 12345;
    const rnd = () => {
      s = (s * 1103515245 + 12345) >>> 0;
      return (s + 0.5) / 4294967296;
    };
    return mapPixels(img, (v) => v + sigma * Math.sqrt(-2 * Math.log(rnd())) * Math.cos(2 * Math.PI * rnd()));
  };
}

const PERTURBATIONS: Perturbation[] = [
  { name: 'none', apply: (i) => i },
  { name: 'gamma 0.6', apply: (i) => mapPixels(i, (v) => 255 * (v / 255) ** 0.6) },
  { name: 'gamma 1.6', apply: (i) => mapPixels(i, (v) => 255 * (v / 255) ** 1.6) },
  { name: 'gain 0.6 +70', apply: (i) => mapPixels(i, (v) => 0.6 * v + 70) },
  { name: 'gain 1.5 −40', apply: (i) => mapPixels(i, (v) => 1.5 * v - 40) },
  { name: 'range 80–160', apply: (i) => mapPixels(i, (v) => 80 + (v * 80) / 255) },
  { name: 'range 100–130', apply: (i) => mapPixels(i, (v) => 100 + (v * 30) / 255) },
  {
    name: 'light gradient ×0.5–1.3',
    apply: (i) => mapPixels(i, (v, x, y) => v * (0.5 + (0.8 * (x + y)) / (i.width + i.height))),
  },
  {
    name: 'vignette',
    apply: (i) =>
      mapPixels(i, (v, x, y) => {
        const r2 = ((x / i.width - 0.5) ** 2 + (y / i.height - 0.5) ** 2) / 0.5;
        return v * (1 - 0.6 * r2);
      }),
  },
  { name: 'shift +6,−6 px', apply: affine(0, 1, 6, -6) },
  { name: 'shift −12,+12 px', apply: affine(0, 1, -12, 12) },
  { name: 'rotate +4°', apply: affine(4) },
  { name: 'rotate −4°', apply: affine(-4) },
  { name: 'rotate +8°', apply: affine(8) },
  { name: 'rotate −8°', apply: affine(-8) },
  { name: 'rotate +12°', apply: affine(12) },
  { name: 'rotate −12°', apply: affine(-12) },
  { name: 'scale 0.92', apply: affine(0, 0.92) },
  { name: 'scale 1.08', apply: affine(0, 1.08) },
  { name: 'blur σ 1.5', apply: gaussianBlur(1.5) },
  { name: 'noise σ 8', apply: seededNoise(8) },
  { name: 'JPEG q50', apply: jpeg(50) },
  { name: 'size 64 (s2)', apply: resize(64) },
  { name: 'size 192 (s2)', apply: resize(192) },
  { name: 'size 64 (all)', apply: resize(64), both: true },
  { name: 'size 150 (all)', apply: resize(150), both: true },
  { name: 'size 192 (all)', apply: resize(192), both: true },
  {
    name: 'pad 8 px black',
    apply: (i) => {
      const w = i.width + 16;
      const data = new Uint8Array(w * (i.height + 16));
      for (let y = 0; y < i.height; y++)
        data.set(i.data.subarray(y * i.width, (y + 1) * i.width), (y + 8) * w + 8);
      return { width: w, height: i.height + 16, data };
    },
  },
  { name: 'crop 8 px border', apply: (i) => warp(i, i.width - 16, i.height - 16, (x, y) => [x + 8, y + 8]) },
  { name: 'non-square 128×112', apply: (i) => warp(i, i.width, i.height - 16, (x, y) => [x, y + 8]) },
];

const program = new Command()
  .argument('<dir>')
  .option('--only <names>', 'comma-separated perturbation name prefixes')
  .option('--no-baseline', 'skip the baseline competitive code')
  .option('--angles <sets>', 'probe angle sets in degrees, "/"-separated (e.g. 0/0,-6,6)')
  .parse();
const dir = program.args[0]!;
const opts = program.opts<{ only?: string; baseline: boolean; angles?: string }>();
const angleSets: number[][] = opts.angles
  ? opts.angles.split('/').map((set) => set.split(',').map(Number))
  : [[...ROI_ROTATION_ANGLES]];
if (angleSets.some((set) => set.some((a) => !Number.isFinite(a)))) throw new Error('bad --angles');
const unionAngles = [0, ...new Set(angleSets.flat().filter((a) => a !== 0))];
const chosen = opts.only
  ? PERTURBATIONS.filter((p) => opts.only!.split(',').some((n) => p.name.startsWith(n.trim())))
  : PERTURBATIONS;

const dataset = await listDataset(dir);
interface Item {
  subject: number;
  session: 1 | 2;
  image: GrayImage;
}
const items: Item[] = [];
for (const [si, s] of dataset.subjects.entries()) {
  const hasPrefix = s.files.some((f) => basename(f).startsWith('2_'));
  for (const [k, f] of s.files.entries()) {
    const session = hasPrefix ? (basename(f).startsWith('2_') ? 2 : 1) : k < s.files.length / 2 ? 1 : 2;
    items.push({ subject: si, session, image: await readImage(f) });
  }
}

async function eer(
  templateOf: (img: GrayImage) => Uint8Array | Promise<Uint8Array>,
  distance: typeof packedDistance,
  p: Perturbation,
  cache: Map<Item, Uint32Array>,
): Promise<number> {
  const packed: Uint32Array[] = [];
  for (const it of items) {
    if (it.session === 1 && !p.both) {
      let w = cache.get(it);
      if (!w) {
        w = packTemplate(decodeTemplate(await templateOf(it.image)));
        cache.set(it, w);
      }
      packed.push(w);
    } else packed.push(packTemplate(decodeTemplate(await templateOf(await p.apply(it.image)))));
  }
  const all = new Uint32Array(items.length * PACKED_WORDS);
  for (const [i, w] of packed.entries()) all.set(w, i * PACKED_WORDS);
  const genuine: number[] = [];
  const impostor: number[] = [];
  for (const [i, a] of items.entries()) {
    if (a.session !== 1) continue;
    for (const [j, b] of items.entries()) {
      if (b.session !== 2) continue;
      const d = distance(all, i * PACKED_WORDS, all, j * PACKED_WORDS);
      (a.subject === b.subject ? genuine : impostor).push(d);
    }
  }
  return errorRates(genuine, impostor).eer;
}

/**
 * EER per angle set: gallery (session 1) at 0°, probes (session 2, perturbed) coded at every angle
 * of `unionAngles` in one batch; a set scores the minimum over its angles.
 */
async function eerRotations(p: Perturbation, cache: Map<Item, Uint32Array>): Promise<number[]> {
  const v = unionAngles.length;
  const gallery = items.filter((it) => it.session === 1);
  const probes = items.filter((it) => it.session === 2);
  const g = new Uint32Array(gallery.length * PACKED_WORDS);
  for (const [i, it] of gallery.entries()) {
    let w = p.both ? undefined : cache.get(it);
    if (!w) {
      const img = p.both ? await p.apply(it.image) : it.image;
      w = packTemplate(decodeTemplate(await extractRoiTemplate(img)));
      if (!p.both) cache.set(it, w);
    }
    g.set(w, i * PACKED_WORDS);
  }
  const pv = new Uint32Array(probes.length * v * PACKED_WORDS);
  for (const [j, it] of probes.entries()) {
    const ts = await extractRoiTemplates(await p.apply(it.image), unionAngles, {}, []);
    for (const [k, t] of ts.entries()) pv.set(packTemplate(decodeTemplate(t)), (j * v + k) * PACKED_WORDS);
  }
  const sets = angleSets.map((set) => set.map((a) => unionAngles.indexOf(a)));
  const genuine = sets.map(() => [] as number[]);
  const impostor = sets.map(() => [] as number[]);
  const d = new Float64Array(v);
  for (const [i, a] of gallery.entries()) {
    const match = variantMatcher(g, i * PACKED_WORDS);
    for (const [j, b] of probes.entries()) {
      for (let k = 0; k < v; k++) d[k] = match(pv, (j * v + k) * PACKED_WORDS, 1);
      for (const [s, set] of sets.entries()) {
        let best = Number.POSITIVE_INFINITY;
        for (const k of set) best = Math.min(best, d[k]!);
        (a.subject === b.subject ? genuine[s]! : impostor[s]!).push(best);
      }
    }
  }
  return sets.map((_, s) => errorRates(genuine[s]!, impostor[s]!).eer);
}

const s1 = items.filter((i) => i.session === 1).length;
console.log(
  `${dir}: ${dataset.subjects.length} subjects, ${s1} gallery / ${items.length - s1} probe images; EER in % (perturbation on session 2)`,
);
const setNames = angleSets.map((set) => `palmid ${set.join(',')}°`);
console.log(`| perturbation | ${opts.baseline ? 'baseline | ' : ''}${setNames.join(' | ')} |`);
console.log(`| --- | ${opts.baseline ? '---: | ' : ''}${setNames.map(() => '---:').join(' | ')} |`);
const cacheP = new Map<Item, Uint32Array>();
const cacheB = new Map<Item, Uint32Array>();
for (const p of chosen) {
  const palm = await eerRotations(p, cacheP);
  const base = opts.baseline ? await eer(baselineTemplate, baselineDistance, p, cacheB) : Number.NaN;
  const pct = (x: number) => (100 * x).toFixed(2);
  console.log(`| ${p.name} | ${opts.baseline ? `${pct(base)} | ` : ''}${palm.map(pct).join(' | ')} |`);
}
