import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Extract } from './evaluate.ts';

type Extracted = Awaited<ReturnType<Extract>>;

interface Stored {
  template?: string;
  variants?: string[];
  hand?: string;
  reason?: string;
}

/**
 * `palm eval --cache <dir>`: an extraction's result per image kept in `<dir>` (a folder outside the
 * repository: the files are templates of single images). The key is the image's absolute path,
 * size and modification time plus `key` (the extraction's options), so a changed image or other
 * options extract again; a failure to acquire is cached too. A cache file that cannot be read is
 * ignored and rewritten.
 */
export function cachedExtract(extract: Extract, dir: string, key: string): Extract {
  let made = false;
  return async (file) => {
    const abs = resolve(file);
    const s = await stat(abs);
    const id = createHash('sha256')
      .update(`${abs}\0${s.size}\0${s.mtimeMs}\0${key}`)
      .digest('hex')
      .slice(0, 32);
    const path = join(dir, `${id}.json`);
    try {
      const v = JSON.parse(await readFile(path, 'utf8')) as Stored;
      if (typeof v.reason === 'string') return { reason: v.reason };
      if (typeof v.template === 'string')
        return {
          template: new Uint8Array(Buffer.from(v.template, 'base64')),
          ...(v.variants ? { variants: v.variants.map((x) => new Uint8Array(Buffer.from(x, 'base64'))) } : {}),
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
