import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The package whose code decides what an extraction returns. */
const PACKAGE = '@palmid/palm';

/**
 * Files of the package root that the fingerprint leaves out, as paths relative to it: the 1:N
 * gallery, the identification decision and its impostor fit compare templates but never make one
 * (nothing else in `src/` imports them; pipeline-fingerprint.test.ts checks that), and the tests.
 */
const DECIDING = new Set(['src/decision.ts', 'src/impostor-fit.ts']);
export function outsideExtraction(rel: string): boolean {
  return rel.endsWith('.test.ts') || rel.startsWith('src/gallery/') || DECIDING.has(rel);
}

/** Every regular file under `dir`, as `/`-separated paths relative to `root`. */
async function filesUnder(root: string, dir: string): Promise<string[]> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(join(root, dir), { withFileTypes: true });
  } catch {
    return []; // no such folder: nothing of it to hash
  }
  const out: string[] = [];
  for (const e of entries) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...(await filesUnder(root, rel)));
    else if (e.isFile()) out.push(rel);
  }
  return out;
}

/**
 * A sha256 (hex) over the files of a `@palmid/palm`-like package at `root` that decide an
 * extraction: `package.json`, every file under `src/` (capture stages, template coding, the WASM
 * kernels) and under `models/` (the feature model), less {@link outsideExtraction}. Each file adds
 * its relative path and its bytes, in path order, so a renamed, added, removed or edited file
 * changes the result and the folder's location or the files' times do not.
 */
export async function fingerprintPackage(root: string): Promise<string> {
  const files = [...(await filesUnder(root, 'src')), ...(await filesUnder(root, 'models'))];
  files.push('package.json');
  const h = createHash('sha256');
  for (const rel of files.filter((f) => !outsideExtraction(f)).sort()) {
    let bytes: Buffer;
    try {
      bytes = await readFile(join(root, rel));
    } catch {
      continue; // a package.json-less test folder
    }
    h.update(`${rel}\0${bytes.length}\0`).update(bytes);
  }
  return h.digest('hex');
}

/**
 * The folder of the installed `@palmid/palm`: where one of its declared exports resolves, walked up
 * to the `package.json` that names the package.
 */
export async function palmPackageRoot(): Promise<string> {
  let dir = dirname(createRequire(import.meta.url).resolve(`${PACKAGE}/match`));
  for (;;) {
    try {
      const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { name?: unknown };
      if (pkg.name === PACKAGE) return dir;
    } catch {
      // no package.json here: one folder up
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json of ${PACKAGE} above its export ${PACKAGE}/match`);
    dir = up;
  }
}

let memo: Promise<string> | undefined;

/**
 * The fingerprint of the palm pipeline's code in this process ({@link fingerprintPackage} of
 * {@link palmPackageRoot}), computed once. `palm eval --cache` and `palm calibrate --cache` mix it
 * into every cache key, so a changed pipeline extracts again instead of reading old templates.
 */
export function pipelineFingerprint(): Promise<string> {
  memo ??= palmPackageRoot().then(fingerprintPackage);
  return memo;
}
