import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cachedExtract } from './cache.ts';
import type { Extract } from './evaluate.ts';
import {
  fingerprintPackage,
  outsideExtraction,
  palmPackageRoot,
  pipelineFingerprint,
} from './pipeline-fingerprint.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(prefix: string): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** A package-like folder: package.json, src/ with a sub-folder, a test, the gallery, models/. */
async function fakePackage(): Promise<string> {
  const root = await tempDir('palm-fp-');
  await mkdir(join(root, 'src', 'capture'), { recursive: true });
  await mkdir(join(root, 'src', 'gallery'), { recursive: true });
  await mkdir(join(root, 'models'), { recursive: true });
  await writeFile(join(root, 'package.json'), '{"name":"@palmid/palm"}');
  await writeFile(join(root, 'src', 'template.ts'), 'export const A = 1;\n');
  await writeFile(join(root, 'src', 'capture', 'coding.ts'), 'export const B = 2;\n');
  await writeFile(join(root, 'src', 'capture', 'coding.test.ts'), 'test\n');
  await writeFile(join(root, 'src', 'gallery', 'gallery.ts'), 'export const G = 3;\n');
  await writeFile(join(root, 'src', 'decision.ts'), 'export const D = 4;\n');
  await writeFile(join(root, 'models', 'palm-features.onnx'), new Uint8Array([1, 2, 3]));
  return root;
}

describe('pipeline fingerprint', () => {
  it('is a stable sha256 hex string of a folder, whatever its location', async () => {
    const a = await fakePackage();
    const b = await fakePackage();
    const fp = await fingerprintPackage(a);
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    expect(await fingerprintPackage(a)).toBe(fp);
    expect(await fingerprintPackage(b)).toBe(fp);
  });

  it('changes with a source file, a model, package.json, a new or a renamed file', async () => {
    const root = await fakePackage();
    const seen = new Set([await fingerprintPackage(root)]);
    const changed = async () => {
      const fp = await fingerprintPackage(root);
      expect(seen.has(fp)).toBe(false);
      seen.add(fp);
    };
    await writeFile(join(root, 'src', 'capture', 'coding.ts'), 'export const B = 3;\n');
    await changed();
    await writeFile(join(root, 'models', 'palm-features.onnx'), new Uint8Array([1, 2, 4]));
    await changed();
    await writeFile(join(root, 'package.json'), '{"name":"@palmid/palm","version":"2"}');
    await changed();
    await writeFile(join(root, 'src', 'capture', 'new-stage.ts'), '');
    await changed();
    await rm(join(root, 'src', 'capture', 'new-stage.ts'));
    await writeFile(join(root, 'src', 'capture', 'other-stage.ts'), '');
    await changed();
  });

  it('ignores tests, the gallery and the decision', async () => {
    const root = await fakePackage();
    const fp = await fingerprintPackage(root);
    await writeFile(join(root, 'src', 'capture', 'coding.test.ts'), 'another test\n');
    await writeFile(join(root, 'src', 'capture', 'more.test.ts'), 'test\n');
    await writeFile(join(root, 'src', 'gallery', 'gallery.ts'), 'export const G = 5;\n');
    await writeFile(join(root, 'src', 'decision.ts'), 'export const D = 5;\n');
    expect(await fingerprintPackage(root)).toBe(fp);
  });

  it('finds the real package, and is computed once per process', async () => {
    const root = await palmPackageRoot();
    expect(JSON.parse(await readFile(join(root, 'package.json'), 'utf8')).name).toBe('@palmid/palm');
    const p = pipelineFingerprint();
    expect(pipelineFingerprint()).toBe(p);
    expect(await p).toMatch(/^[0-9a-f]{64}$/);
  });

  it('leaves out only code that no extraction imports', async () => {
    // the gallery and the decision may import the rest, never the other way round
    const root = await palmPackageRoot();
    const files = (await readdir(join(root, 'src'), { recursive: true }))
      .map((f) => `src/${f.split('\\').join('/')}`)
      .filter((f) => f.endsWith('.ts') && !outsideExtraction(f));
    expect(files.length).toBeGreaterThan(10);
    for (const f of files) {
      const text = await readFile(join(root, f), 'utf8');
      expect(text, f).not.toMatch(/['"][./]+(gallery\/|decision\.ts|impostor-fit\.ts)/);
      expect(text, f).not.toMatch(/@palmid\/palm\/(gallery|decision|impostor-fit)/);
    }
  });
});

describe('cache key', () => {
  it('hits under the same fingerprint, misses under another', async () => {
    const dir = await tempDir('palm-cache-');
    const image = join(dir, 'a.bmp');
    await writeFile(image, new Uint8Array([9, 9, 9]));
    const cache = join(dir, 'cache');
    let calls = 0;
    const extract: Extract = async () => {
      calls++;
      return { template: new Uint8Array([calls]) };
    };
    const v1 = cachedExtract(extract, cache, 'opts', async () => 'aaaa');
    expect(await v1(image)).toEqual({ template: new Uint8Array([1]) });
    expect(await v1(image)).toEqual({ template: new Uint8Array([1]) });
    // a new process with the same code reads the entry
    expect(await cachedExtract(extract, cache, 'opts', async () => 'aaaa')(image)).toEqual({
      template: new Uint8Array([1]),
    });
    expect(calls).toBe(1);
    // changed code: extracted again, and the old entry stays for the old code
    const v2 = cachedExtract(extract, cache, 'opts', async () => 'bbbb');
    expect(await v2(image)).toEqual({ template: new Uint8Array([2]) });
    expect(await v2(image)).toEqual({ template: new Uint8Array([2]) });
    expect(calls).toBe(2);
    expect(await v1(image)).toEqual({ template: new Uint8Array([1]) });
    expect(calls).toBe(2);
  });
});
