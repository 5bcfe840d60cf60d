/**
 * Writes a synthetic ROI database `<out>/<subject>/<session>_<n>.<ext>` for `palm eval --roi`.
 * usage: tsx palm-lab/scripts/make-roi-set.ts <out> [--style contact|contactless|vein] [--subjects 50]
 *        [--per-session 4] [--size 128] [--format bmp|png|jpg|pgm] [--seed s]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RoiStyle, renderRoi } from '@palmid/firmware-sim/synth/roi';
import { encodeBmp8, encodePgm } from '@palmid/palm/capture/image-write';
import { Command } from 'commander';
import sharp from 'sharp';

const program = new Command()
  .argument('<out>')
  .option('--style <style>', 'contact | contactless | vein', 'contactless')
  .option('--subjects <n>', 'subjects', '50')
  .option('--per-session <n>', 'images per session (two sessions)', '4')
  .option('--size <px>', 'ROI side', '128')
  .option('--format <fmt>', 'bmp | png | jpg | pgm', 'bmp')
  .option('--seed <s>', 'identity prefix', 'roi')
  .parse();
const out = program.args[0]!;
const o = program.opts<{
  style: RoiStyle;
  subjects: string;
  perSession: string;
  size: string;
  format: string;
  seed: string;
}>();
for (let s = 0; s < Number(o.subjects); s++) {
  const subject = `s${String(s + 1).padStart(3, '0')}`;
  mkdirSync(join(out, subject), { recursive: true });
  for (const session of [1, 2] as const) {
    for (let k = 0; k < Number(o.perSession); k++) {
      const img = renderRoi({
        identity: `${o.seed}-${subject}`,
        style: o.style,
        session,
        sample: k,
        size: Number(o.size),
      });
      const file = join(out, subject, `${session}_${k + 1}.${o.format}`);
      if (o.format === 'bmp') writeFileSync(file, encodeBmp8(img));
      else if (o.format === 'pgm') writeFileSync(file, encodePgm(img));
      else {
        const s2 = sharp(img.data, { raw: { width: img.width, height: img.height, channels: 1 } });
        await (o.format === 'jpg' ? s2.jpeg({ quality: 90 }) : s2.png()).toFile(file);
      }
    }
  }
}
console.log(`wrote ${o.subjects} subjects × ${2 * Number(o.perSession)} ${o.style} ROIs to ${out}`);
