import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readImage } from '@palmid/palm/capture/image-io';
import { encodeBmp8 } from '@palmid/palm/capture/image-write';
import { afterAll, describe, expect, it } from 'vitest';
import { listDataset, mergeSameIdentities } from './dataset.ts';

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

describe('one person under two labels (--same)', () => {
  const ds = {
    subjects: [
      { name: 'a', files: ['a/1', 'a/2'] },
      { name: 'b', files: ['b/1'] },
      { name: 'c', files: ['c/1', 'c/2'] },
      { name: 'd', files: ['d/1'] },
    ],
  };

  it('merges the second label into the first and keeps the order of the rest', () => {
    const merged = mergeSameIdentities(ds, [
      { into: 'a', from: 'c' },
      { into: 'd', from: 'b' },
    ]);
    expect(merged.subjects).toEqual([
      { name: 'a', files: ['a/1', 'a/2', 'c/1', 'c/2'], recaptures: 2 },
      { name: 'd', files: ['d/1', 'b/1'], recaptures: 1 },
    ]);
    expect(ds.subjects[0]!.files).toEqual(['a/1', 'a/2']); // the listing itself is untouched
  });

  it('refuses unknown labels, a label merged twice, chains and a set left with one identity', () => {
    expect(() => mergeSameIdentities(ds, [{ into: 'a', from: 'x' }])).toThrow(/"x", which is no identity/);
    expect(() =>
      mergeSameIdentities(ds, [
        { into: 'a', from: 'b' },
        { into: 'c', from: 'b' },
      ]),
    ).toThrow(/"b" twice/);
    expect(() =>
      mergeSameIdentities(ds, [
        { into: 'a', from: 'b' },
        { into: 'c', from: 'a' },
      ]),
    ).toThrow(/merges "a" away and into it/);
    const two = { subjects: ds.subjects.slice(0, 2) };
    expect(() => mergeSameIdentities(two, [{ into: 'a', from: 'b' }])).toThrow(/fewer than two identities/);
  });
});
