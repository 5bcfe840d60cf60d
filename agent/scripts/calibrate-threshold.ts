/**
 * Pools genuine and impostor distances over ROI datasets and prints the score threshold at
 * FMR 1e-3 / 1e-4 / 1e-5 with the FNMR there (feeds shared/src/palm/threshold.ts).
 * usage: tsx agent/scripts/calibrate-threshold.ts <roi-dir>...
 */
import { distanceToScore } from '@palmid/shared/palm/match.ts';
import { listDataset } from '../src/palm/dataset.ts';
import { evaluate } from '../src/palm/evaluate.ts';
import { readImage } from '../src/palm/image-io.ts';
import { extractRoiTemplate } from '../src/palm/roi-template.ts';

const impostor: number[] = [];
const genuine: number[] = [];
for (const dir of process.argv.slice(2)) {
  const { extra, report } = await evaluate(await listDataset(dir), async (f) => ({
    template: await extractRoiTemplate(await readImage(f)),
  }));
  impostor.push(...extra.impostor);
  genuine.push(...extra.genuine);
  console.log(dir, JSON.stringify(report));
}
impostor.sort((a, b) => a - b);
for (const fmr of [1e-3, 1e-4, 1e-5]) {
  const t = impostor[Math.floor(fmr * impostor.length)]!;
  const fnmr = genuine.filter((g) => g >= t).length / genuine.length;
  console.log(
    JSON.stringify({
      fmr,
      distance: Number(t.toFixed(4)),
      score: Number(distanceToScore(t).toFixed(4)),
      fnmr: Number(fnmr.toFixed(5)),
    }),
  );
}
console.log(JSON.stringify({ genuine: genuine.length, impostor: impostor.length }));
