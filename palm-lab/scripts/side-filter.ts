/**
 * What the server's side filter costs in 1:N on real frames (docs/palm-pipeline.md, "Left/right").
 * Per identity folder, the first capture whose decided side is the folder's side (`…_l`, `…_r`,
 * `…_left`, `…_right`; any decided side when the folder names none) is enrolled under that side, as
 * `agent enroll` does; every other capture of the set is a probe, searched in the two-stage gallery
 * at the deployed threshold twice: with the side the capture decided in the template header (the
 * gallery then looks at that side's palms only) and with the side left out (both sides). Reports
 * correct identifications, wrong ones and misses of each. The decided side is also compared with
 * the folder's side and with the identity's majority.
 *
 *   tsx palm-lab/scripts/side-filter.ts --sensor grey-dark <dir>
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { readImage } from '@palmid/palm/capture/image-io';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { type SensorName, sensorArg } from '@palmid/palm/capture/sensor-profiles';
import { MemoryGallery } from '@palmid/palm/gallery/gallery';
import { decodeTemplate, encodeTemplate, type TemplateHand } from '@palmid/palm/template';
import { Command } from 'commander';

const program = new Command()
  .description("1:N identification on real frames with and without the gallery's side filter")
  .argument('<dir>', '<dir>/<identity>/<image> tree of whole frames')
  .option('--sensor <profile>', 'the frames sensor profile', sensorArg, 'grey-dark' as SensorName)
  .parse();
const dir = program.args[0]!;
const { sensor } = program.opts<{ sensor: SensorName }>();

const folderSide = (name: string): 'left' | 'right' | null => {
  const m = /[_-](l|r|left|right)$/i.exec(name);
  return m ? (m[1]!.toLowerCase().startsWith('l') ? 'left' : 'right') : null;
};
const withHand = (t: Uint8Array, hand: TemplateHand) => encodeTemplate({ ...decodeTemplate(t), hand });

const gallery = new MemoryGallery();
const probes: { id: string; template: Uint8Array; hand: TemplateHand }[] = [];
const sides = { decided: 0, unknown: 0, againstFolder: 0, againstMajority: 0 };
let folders: string[];
try {
  folders = (await readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
} catch (err) {
  console.error(`error: cannot read ${dir}: ${(err as Error).message}`);
  process.exit(1);
}
for (const id of folders.sort()) {
  const label = folderSide(id);
  const seen = { left: 0, right: 0 };
  let enrolled = false;
  for (const f of (await readdir(join(dir, id))).sort()) {
    let r: Awaited<ReturnType<typeof processCapture>>;
    try {
      r = await processCapture(await readImage(join(dir, id, f)), { sensor });
    } catch {
      continue; // not an image
    }
    if (!r.ok) continue;
    if (r.hand === 'unknown') sides.unknown++;
    else {
      sides.decided++;
      seen[r.hand]++;
      if (label && r.hand !== label) sides.againstFolder++;
    }
    if (!enrolled && r.hand !== 'unknown' && (label === null || r.hand === label)) {
      gallery.add({ palmId: `${id}/${f}`, userId: id, hand: r.hand, template: r.template });
      enrolled = true;
    } else probes.push({ id, template: r.template, hand: r.hand });
  }
  sides.againstMajority += Math.min(seen.left, seen.right);
}
const search = (hand: (p: (typeof probes)[number]) => TemplateHand) => {
  const o = { correct: 0, wrong: 0, miss: 0 };
  for (const p of probes) {
    const hit = gallery.identify(withHand(p.template, hand(p)));
    if (!hit) o.miss++;
    else if (hit.userId === p.id) o.correct++;
    else o.wrong++;
  }
  return o;
};
console.log(
  JSON.stringify({
    sensor,
    enrolled: gallery.size,
    probes: probes.length,
    sides,
    decided_side: search((p) => p.hand),
    both_sides: search(() => 'unknown'),
  }),
);
