/**
 * Capture-path speed: `processCapture` (decoded frame → template) per frame, p50/p95 in ms of CPU
 * time of this process (one thread; neighbours on a shared machine do not inflate it), with the
 * target of docs/palm-pipeline.md ("Speed of the capture path"): ≤ 5 ms p50. Image decoding is
 * not timed: every frame is decoded first.
 *
 *   npm run bench -- capture <dir of images> [--sensor grey-dark] [--max 200] [--rounds 3]
 *
 * Without a directory, a synthetic set is rendered first with
 * `npm run palm -- synth <tmp> --sensor grey-dark --width 640 --height 480`. Writes
 * bench/results/capture.json (aggregate numbers only; never per image).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { captureSimdAvailable } from '@palmid/palm/capture/capture-kernel';
import { type GrayImage, readImage } from '@palmid/palm/capture/image-io';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { SENSOR_NAMES, type SensorName } from '@palmid/palm/capture/sensor-profiles';

const HERE = dirname(fileURLToPath(import.meta.url));
const TARGET_MS = 5;
const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(
    'usage: npm run bench -- capture [<dir of images>] [--sensor grey-dark] [--max 200] [--rounds 3]\n',
  );
  process.exit(0);
}
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : def;
};
const sensor = opt('sensor', 'grey-dark') as SensorName;
if (!(SENSOR_NAMES as readonly string[]).includes(sensor)) {
  process.stderr.write(`unknown sensor '${sensor}' (known: ${SENSOR_NAMES.join(', ')})\n`);
  process.exit(2);
}
const max = Number(opt('max', '200'));
const rounds = Number(opt('rounds', '3'));
if (!(max > 0) || !(rounds > 0)) {
  process.stderr.write('--max and --rounds must be positive numbers\n');
  process.exit(2);
}
let made: string | null = null;
let dir = args.find((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1]!.startsWith('--')));
if (!dir) {
  dir = mkdtempSync(join(tmpdir(), 'palmid-capture-'));
  made = dir;
  const tsx = join(HERE, '..', 'node_modules', '.bin', 'tsx');
  const cli = join(HERE, '..', 'agent', 'src', 'palm', 'cli.ts');
  const r = spawnSync(
    tsx,
    [cli, 'synth', dir, '--identities', '5', '--sensor', sensor, '--width', '640', '--height', '480'],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function images(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(jpe?g|png|bmp|pgm|pnm|tiff?)$/i.test(name)) out.push(p);
    }
  };
  walk(root);
  return out;
}

const files = images(dir).slice(0, max);
if (files.length === 0) {
  process.stderr.write(`no images under ${dir}\n`);
  process.exit(2);
}
const frames: GrayImage[] = [];
for (const f of files) frames.push(await readImage(f));
if (made) rmSync(made, { recursive: true, force: true });
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
for (const frame of frames.slice(0, 20)) await processCapture(frame, { sensor }); // warm-up (model load, JIT)
const times: number[] = [];
let ok = 0;
for (let r = 0; r < rounds; r++) {
  for (const frame of frames) {
    const t0 = cpuMs();
    const res = await processCapture(frame, { sensor });
    times.push(cpuMs() - t0);
    if (r === 0 && res.ok) ok++;
  }
}
times.sort((a, b) => a - b);
const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!;
const p50 = q(0.5);
const row = {
  frames: frames.length,
  size: `${frames[0]!.width}×${frames[0]!.height}`,
  accepted: ok,
  p50_ms: Number(p50.toFixed(2)),
  p95_ms: Number(q(0.95).toFixed(2)),
  target_ms: TARGET_MS,
  ratio: Number((p50 / TARGET_MS).toFixed(2)),
  /** the WebAssembly SIMD capture kernel in use (capture-kernel.ts), else the JavaScript loops */
  simd: captureSimdAvailable,
};
process.stdout.write(`${JSON.stringify(row)}\n`);
const resultsDir = join(HERE, 'results');
mkdirSync(resultsDir, { recursive: true });
writeFileSync(join(resultsDir, 'capture.json'), `${JSON.stringify({ sensor, ...row }, null, 2)}\n`);
process.stdout.write(
  `processCapture p50 ${row.p50_ms} ms (target ≤ ${TARGET_MS} ms: ${p50 <= TARGET_MS ? 'met' : 'NOT met'})\n`,
);
