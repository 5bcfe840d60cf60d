import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Extract } from './evaluate.ts';
import { pipelineFingerprint } from './pipeline-fingerprint.ts';

type Extracted = Awaited<ReturnType<Extract>>;

interface Stored {
  template?: string;
  variants?: string[];
  hand?: string;
  reason?: string;
}

/**
 * `palm eval --cache <dir>`: an extraction's result per image kept in `<dir>` (a folder outside the
 * repository: the files are templates of single images). The key is a hash of the image's bytes,
 * `key` (the extraction's options) and `fingerprint` (by default {@link pipelineFingerprint}, a hash
 * of the palm pipeline's code), so a changed image, other options or a changed pipeline extract
 * again and a copy of an image does not; entries written under another fingerprint are never read
 * again (delete the folder to reclaim them). A failure to acquire is cached too. An image that
 * cannot be read is passed to the extraction as it is (its failure is not cached). A cache file that
 * cannot be read is ignored and rewritten.
 */
export function cachedExtract(
  extract: Extract,
  dir: string,
  key: string,
  fingerprint: () => Promise<string> = pipelineFingerprint,
): Extract {
  let made = false;
  return async (file) => {
    let bytes: Buffer;
    try {
      bytes = await readFile(file);
    } catch {
      return extract(file);
    }
    // the image's bytes, the options and the code: a copy or hard link of an image hits the same entry
    const id = createHash('sha256')
      .update(bytes)
      .update(`\0${key}\0${await fingerprint()}`)
      .digest('hex')
      .slice(0, 32);
    const path = join(dir, `${id}.json`);
    try {
      const v = JSON.parse(await readFile(path, 'utf8')) as Stored;
      if (typeof v.reason === 'string') return { reason: v.reason };
      if (typeof v.template === 'string')
        return {
          template: new Uint8Array(Buffer.from(v.template, 'base64')),
          ...(v.variants
            ? { variants: v.variants.map((x) => new Uint8Array(Buffer.from(x, 'base64'))) }
            : {}),
          ...(v.hand ? { hand: v.hand as never } : {}),
        };
    } catch {
      // not cached yet (or unreadable): extract
    }
    const r: Extracted = await extract(file);
    const out: Stored =
      'reason' in r
        ? { reason: r.reason }
        : {
            template: Buffer.from(r.template).toString('base64'),
            ...(r.variants ? { variants: r.variants.map((x) => Buffer.from(x).toString('base64')) } : {}),
            ...(r.hand ? { hand: r.hand } : {}),
          };
    if (!made) {
      await mkdir(dir, { recursive: true });
      made = true;
    }
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(out));
    await rename(tmp, path);
    return r;
  };
}
