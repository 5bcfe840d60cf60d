/**
 * Whole-frame geometry diagnosis: renders synthetic captures, runs the pipeline, and lists the
 * worst genuine pairs, the captures that drag their palm down, and the refused frames with their
 * reasons and hand-geometry measures. With --png, writes each listed frame (palm circle, valleys
 * and ROI square drawn in) and its ROI as PNGs, to see whether rotation, scale or centre is off.
 * usage: tsx palm-lab/scripts/palm-geometry-diag.ts [--identities 50] [--captures 5] [--seed id]
 *        [--png out/] [--worst 15] [--json summary.json]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { type HandGeometry, locateHand } from '@palmid/palm/capture/hand-geometry';
import { cropPalm, ROI_SIDE_PER_RADIUS } from '@palmid/palm/capture/hand-roi';
import type { GrayImage } from '@palmid/palm/capture/image-io';
import { ROI_SIZE } from '@palmid/palm/capture/model-graph';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { packedDistance, packTemplate } from '@palmid/palm/match';
import { decodeTemplate } from '@palmid/palm/template';
import { Command } from 'commander';
import sharp from 'sharp';
import { errorRates } from '../src/eval/metrics.ts';

const o = new Command()
  .option('--identities <n>', 'identities', '50')
  .option('--captures <n>', 'captures per hand', '5')
  .option('--seed <s>', 'identity prefix (as `palm synth --seed`)', 'id')
  .option('--png <dir>', 'write frames and ROIs of the listed cases')
  .option('--worst <n>', 'genuine pairs to list', '15')
  .option('--json <file>', 'write the summary as JSON')
  .parse()
  .opts<{ identities: string; captures: string; seed: string; png?: string; worst: string; json?: string }>();

interface Item {
  name: string;
  palm: number;
  frame: GrayImage;
  g: HandGeometry;
  words?: Uint32Array;
  reason?: string;
  measures?: unknown;
}

const deg = (a: number | null) => (a === null ? null : Number(((a * 180) / Math.PI).toFixed(1)));
const items: Item[] = [];
let palm = 0;
for (let i = 0; i < Number(o.identities); i++) {
  const identity = `${o.seed}${String(i + 1).padStart(4, '0')}`;
  for (const hand of ['left', 'right'] as const) {
    for (let c = 1; c <= Number(o.captures); c++) {
      const frame = await renderPalm({ identity, hand, capture: c });
      const g = locateHand(frame);
      const r = await processCapture(frame);
      const it: Item = { name: `${identity}_${hand}/${c}`, palm, frame, g };
      if (r.ok) it.words = packTemplate(decodeTemplate(r.template));
      else {
        it.reason = r.reason;
        it.measures = r.measures;
      }
      items.push(it);
    }
    palm++;
  }
}

const ok = items.filter((x) => x.words);
const genuine: Array<{ a: Item; b: Item; d: number }> = [];
const impostor: number[] = [];
for (let i = 0; i < ok.length; i++) {
  for (let j = i + 1; j < ok.length; j++) {
    const d = packedDistance(ok[i]!.words!, 0, ok[j]!.words!, 0);
    if (ok[i]!.palm === ok[j]!.palm) genuine.push({ a: ok[i]!, b: ok[j]!, d });
    else impostor.push(d);
  }
}
const rates = errorRates(
  genuine.map((x) => x.d),
  impostor,
);
const thr = rates.thresholdAtFar(1e-4);
genuine.sort((x, y) => y.d - x.d);
const geo = (g: HandGeometry) => ({
  cx: g.cx,
  cy: g.cy,
  r: Number(g.radius.toFixed(1)),
  up: deg(g.up),
  hand: g.hand,
  fingers: g.fingers,
  edge: g.touchesEdge,
  ...(g.valleys ? { valleys: g.valleys.map((p) => [Number(p.x.toFixed(1)), Number(p.y.toFixed(1))]) } : {}),
});
// per capture: how many of its genuine pairs fail at the FAR 1e-4 threshold
const failing = new Map<Item, number>();
for (const p of genuine) {
  if (p.d <= thr) continue;
  failing.set(p.a, (failing.get(p.a) ?? 0) + 1);
  failing.set(p.b, (failing.get(p.b) ?? 0) + 1);
}
const refused = items.filter((x) => x.reason);
const reasons: Record<string, number> = {};
for (const x of refused) reasons[x.reason!] = (reasons[x.reason!] ?? 0) + 1;
const summary = {
  frames: items.length,
  enrolled: ok.length,
  fte: Number((refused.length / items.length).toFixed(4)),
  reasons,
  genuine: genuine.length,
  impostor: impostor.length,
  eer: Number(rates.eer.toFixed(5)),
  frr_at_far_1e3: Number(rates.frrAtFar(1e-3).toFixed(5)),
  frr_at_far_1e4: Number(rates.frrAtFar(1e-4).toFixed(5)),
  threshold_1e4: Number(thr.toFixed(4)),
  worst_pairs: genuine
    .slice(0, Number(o.worst))
    .map((p) => ({ a: p.a.name, b: p.b.name, d: Number(p.d.toFixed(4)) })),
  bad_captures: [...failing.entries()]
    .sort((x, y) => y[1] - x[1])
    .map(([x, n]) => ({ name: x.name, failing_pairs: n, ...geo(x.g) })),
  refused: refused.map((x) => ({ name: x.name, reason: x.reason, ...geo(x.g) })),
};
console.log(JSON.stringify(summary, null, 1));
if (o.json) writeFileSync(o.json, JSON.stringify(summary, null, 1));

if (o.png) {
  mkdirSync(o.png, { recursive: true });
  const listed = new Set<Item>([...failing.keys(), ...refused]);
  // and one clean capture of each listed palm, for comparison
  for (const x of [...listed]) {
    const twin = ok.find((y) => y.palm === x.palm && !failing.has(y));
    if (twin) listed.add(twin);
  }
  for (const x of listed) {
    const base = join(o.png, x.name.replace('/', '_'));
    await writePng(`${base}_frame.png`, annotate(x.frame, x.g), x.frame.width, x.frame.height);
    const roi = cropPalm(x.frame, x.g);
    await writePng(
      `${base}_roi.png`,
      Uint8Array.from(roi, (v) => Math.max(0, Math.min(255, v))),
      ROI_SIZE,
      ROI_SIZE,
    );
  }
}

function annotate(frame: GrayImage, g: HandGeometry): Uint8Array {
  const out = Uint8Array.from(frame.data);
  const put = (x: number, y: number, v: number) => {
    const ix = Math.round(x);
    const iy = Math.round(y);
    if (ix >= 0 && iy >= 0 && ix < frame.width && iy < frame.height) out[iy * frame.width + ix] = v;
  };
  for (let k = 0; k < 360; k++) {
    const a = (k * Math.PI) / 180;
    put(g.cx + g.radius * Math.cos(a), g.cy + g.radius * Math.sin(a), 255);
  }
  for (const p of g.valleys ?? []) {
    for (let d = -3; d <= 3; d++) {
      put(p.x + d, p.y, 0);
      put(p.x, p.y + d, 0);
    }
  }
  if (g.up !== null) {
    const roi = g.roi ?? { cx: g.cx, cy: g.cy, side: g.radius * ROI_SIDE_PER_RADIUS, up: g.up };
    const ux = Math.cos(roi.up);
    const uy = Math.sin(roi.up);
    const h = roi.side / 2;
    for (let t = -h; t <= h; t += 0.5) {
      for (const s of [-h, h]) {
        put(roi.cx + ux * s - uy * t, roi.cy + uy * s + ux * t, 255);
        put(roi.cx + ux * t - uy * s, roi.cy + uy * t + ux * s, 255);
      }
    }
  }
  return out;
}

async function writePng(file: string, data: Uint8Array, width: number, height: number) {
  await sharp(data, { raw: { width, height, channels: 1 } })
    .png()
    .toFile(file);
}
