import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readImage } from '../image-io.ts';
import { encodeBmp8 } from '../image-write.ts';
import { listDataset } from './dataset.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('ROI dataset listing', () => {
  it('finds upper-case extensions and session sub-folders, skips hidden, non-image and broken entries', async () => {
    const root = await mkdtemp(join(tmpdir(), 'palm-ds-'));
    dirs.push(root);
    const bmp = encodeBmp8({ width: 20, height: 20, data: new Uint8Array(400).fill(90) });
    await mkdir(join(root, '001', 'session2'), { recursive: true });
    await mkdir(join(root, '002'), { recursive: true });
    await mkdir(join(root, '.hidden'), { recursive: true });
    await writeFile(join(root, '001', '01.BMP'), bmp);
    await writeFile(join(root, '001', 'session2', '02.Jpg'), bmp); // content decides the decoder
    await writeFile(join(root, '001', 'Thumbs.db'), 'x');
    await writeFile(join(root, '001', '.DS_Store'), 'x');
    await writeFile(join(root, '001', '._01.BMP'), 'AppleDouble');
    await writeFile(join(root, '002', 'a.bmp'), bmp);
    await writeFile(join(root, '002', 'desktop.ini'), '[x]');
    await writeFile(join(root, '.hidden', 'a.bmp'), bmp);
    await writeFile(join(root, 'readme.txt'), 'top-level files are ignored');
    await symlink(join(root, 'nowhere'), join(root, '002', 'broken.bmp'));
    const ds = await listDataset(root);
    expect(ds.subjects.map((s) => s.name)).toEqual(['001', '002']);
    expect(ds.subjects[0]!.files.map((f) => f.slice(root.length + 1))).toEqual([
      join('001', '01.BMP'),
      join('001', 'session2', '02.Jpg'),
    ]);
    expect(ds.subjects[1]!.files).toHaveLength(1);
    for (const s of ds.subjects) for (const f of s.files) expect((await readImage(f)).width).toBe(20);
  });

  it('treats hand sub-folders as separate identities and session sub-folders as one', async () => {
    const root = await mkdtemp(join(tmpdir(), 'palm-ds-'));
    dirs.push(root);
    const bmp = encodeBmp8({ width: 20, height: 20, data: new Uint8Array(400).fill(90) });
    for (const d of ['p1/L', 'p1/R', 'p2/Left', 'p2/Right/session1', 'p3/s1', 'p3/s2'])
      await mkdir(join(root, d), { recursive: true });
    for (const d of ['p1/L', 'p1/R', 'p2/Left', 'p2/Right/session1', 'p3/s1', 'p3/s2'])
      await writeFile(join(root, d, 'a.bmp'), bmp);
    const ds = await listDataset(root);
    expect(ds.subjects.map((s) => [s.name, s.files.length])).toEqual([
      ['p1/L', 1],
      ['p1/R', 1],
      ['p2/Left', 1],
      ['p2/Right', 1],
      ['p3', 2],
    ]);
  });
});
