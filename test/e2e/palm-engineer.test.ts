import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, tempDir } from './harness.ts';

/**
 * A biometrics engineer's first hour with `npm run palm` (docs/evaluate-your-images.md), as real
 * processes: synth says what it wrote and records the sensor, eval says which profile it used and
 * suggests others when most frames fail, pad reads one's own bona fide and attack folders, and the
 * profiles say how far they were validated.
 */
const palm = (args: string[], timeoutMs = 180_000) => cli('palm-lab/src/cli.ts', args, {}, timeoutMs);

describe('npm run palm for a biometrics engineer', () => {
  const tmp = tempDir('palmid-engineer-');
  const grey = join(tmp.dir, 'grey');
  const pad = join(tmp.dir, 'pad');

  beforeAll(async () => {
    const made = await palm([
      'synth',
      grey,
      '--identities',
      '3',
      '--captures',
      '2',
      '--hand',
      'right',
      '--sensor',
      'grey-dark',
    ]);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(
      /^wrote 6 frame\(s\) to .*grey: 3 identities × the right hand × 2 capture\(s\)$/m,
    );
    expect(made.stdout).toMatch(/^ {2}sensor grey-dark \(.+\), 320 × 240 PNG$/m);
    expect(made.stdout).toMatch(/^ {2}files: .*id0001_right\/1\.png … .*id0003_right\/2\.png$/m);
    expect(made.stdout).toMatch(/^next: npm run palm -- eval .*grey$/m);
    const manifest = JSON.parse(readFileSync(join(grey, 'palmid-synth.json'), 'utf8'));
    expect(manifest).toMatchObject({
      sensor: 'grey-dark',
      identities: 3,
      captures: 2,
      images: 6,
      attack: null,
    });
    for (const [folder, extra] of [
      ['bona-fide', []],
      ['print', ['--attack', 'print']],
      ['screen', ['--attack', 'screen']],
    ] as const) {
      const r = await palm([
        'synth',
        join(pad, folder),
        '--identities',
        '3',
        '--captures',
        '2',
        '--hand',
        'right',
        ...extra,
      ]);
      expect(r.code, r.stderr).toBe(0);
    }
  }, 300_000);
  afterAll(() => tmp.remove());

  it('eval takes the sensor palm synth recorded, and says so', async () => {
    const r = await palm(['eval', grey, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ sensor: 'grey-dark', images: 6, enrolled: 6 });
    const s = await palm(['eval', grey]);
    expect(s.stdout).toMatch(
      /^palm eval .* \(whole frames, kiosk pipeline, sensor grey-dark, recorded by palm synth\)$/m,
    );
    expect(s.stderr).not.toMatch(/hint:/);
  }, 240_000);

  it('without --sensor and no record, most frames failing names the profile used and the ones that fit', async () => {
    rmSync(join(grey, 'palmid-synth.json'));
    const r = await palm(['eval', grey, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { sensor: string; fta: number };
    expect(report.sensor).toBe('simulator');
    expect(report.fta).toBeGreaterThanOrEqual(0.5);
    expect(r.stderr).toMatch(
      /hint: \d+ % of the frames failed to enrol under the sensor profile simulator \(the default: no --sensor given\)\./,
    );
    expect(r.stderr).toMatch(/^ {4}grey-dark +6\/6 +grey-level visible camera, dark background/m);
    expect(r.stderr).toMatch(/then: npm run palm -- eval .*grey --sensor <profile>/);
    const s = await palm(['eval', grey]);
    expect(s.stdout).toMatch(/\(whole frames, kiosk pipeline, sensor simulator, the default\)/);
    // given explicitly, the profile is the engineer's choice: no hint
    const given = await palm(['eval', grey, '--sensor', 'grey-dark', '--json']);
    expect(JSON.parse(given.stdout)).toMatchObject({ sensor: 'grey-dark', fta: 0 });
    expect(given.stderr).not.toMatch(/hint:/);
  }, 300_000);

  it('pad <dir> reads bona-fide/ and one folder per attack type, with a readable summary', async () => {
    const r = await palm(['pad', pad]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^palm pad .*pad \(sensor simulator; ISO\/IEC 30107-3 terms\)$/m);
    expect(r.stdout).toMatch(
      /^threshold +liveness score 50 on a 0–100 scale \(the kiosk sends 0\.50 to the server\)/m,
    );
    expect(r.stdout).toMatch(/^bona fide +6 image\(s\) in bona-fide\/, 6 reached the liveness check$/m);
    expect(r.stdout).toMatch(/^BPCER +\d+\.\d % +bona fide presentations called attacks/m);
    expect(r.stdout).toMatch(/^attack print +6 image\(s\)/m);
    expect(r.stdout).toMatch(/^attack screen +6 image\(s\)/m);
    expect(r.stdout).toMatch(/^APCER \(worst\) +\d+\.\d %$/m);
    expect(r.stdout).toMatch(/^for BPCER ≤ +5 % +threshold \d+ \(0–100\)/m);
    const j = await palm(['pad', pad, '--json']);
    const report = JSON.parse(j.stdout) as {
      threshold: number;
      bona_fide: { images: number; bpcer: number };
      attacks: { name: string; images: number; apcer: number }[];
    };
    expect(report.threshold).toBe(50);
    expect(report.bona_fide.images).toBe(6);
    expect(report.attacks.map((a) => [a.name, a.images])).toEqual([
      ['print', 6],
      ['screen', 6],
    ]);
    // the simulator's own attacks are what its profile was fitted on: none passes
    expect(report.attacks.every((a) => a.apcer === 0)).toBe(true);
  }, 240_000);

  it('pad <dir> with a folder missing, or none at all, is one line and exit 1 (no hang, no stack)', async () => {
    const missing = await palm(['pad', join(tmp.dir, 'nowhere')], 60_000);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toMatch(/^error: Cannot read dataset directory .*nowhere$/);
    const only = join(tmp.dir, 'only');
    mkdirSync(join(only, 'bona-fide'), { recursive: true });
    copyFileSync(join(pad, 'bona-fide', 'id0001_right', '1.png'), join(only, 'bona-fide', '1.png'));
    const onlyBona = await palm(['pad', only], 60_000);
    expect(onlyBona.code).toBe(1);
    expect(onlyBona.stderr).toMatch(/needs a bona-fide\/ folder and at least one attack folder/);
    expect(onlyBona.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);

  it('--help does not present the independently measured profiles that failed as ready', async () => {
    const r = await palm(['eval', '--help'], 60_000);
    expect(r.code).toBe(0);
    const line = (name: string) => {
      const at = r.stdout.indexOf(`  ${name} `);
      return r.stdout.slice(at, r.stdout.indexOf('\n', r.stdout.indexOf('\n', at) + 1));
    };
    expect(line('contact-visible')).toMatch(/\[NOT READY\].*enrols 69 % of the images, EER 25 %/s);
    expect(line('contact-nir')).toMatch(/\[NOT READY\].*enrols 88 % of the images, EER 26 %/s);
    expect(line('phone')).toMatch(/\[NOT READY\].*enrols 78–92 % of the images, EER 17–25 %/s);
    expect(line('contactless-nir')).toMatch(/\[validated\].*enrols 99\.7 % of the images, EER 1\.1 %/s);
    const agent = await cli('agent/src/cli/main.ts', ['config', '--help'], {}, 60_000);
    expect(agent.stdout).toMatch(/contact-visible: .*\n {4}validated: NOT READY: .*EER 25 %/);
  }, 120_000);
});
