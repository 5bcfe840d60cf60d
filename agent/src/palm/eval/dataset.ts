import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from '@palmid/shared/errors.ts';

const IMAGE_EXT = /\.(bmp|dib|png|jpe?g|jfif|pgm|ppm|pnm|tiff?|webp|gif)$/i;

/** Sub-folders that hold one hand of a subject (a separate identity), not a session. */
const HAND_DIR = /^(l|r|left|right)([ _-]?(hand|palm))?$/i;

export interface Dataset {
  subjects: Array<{ name: string; files: string[] }>;
}

/**
 * Image files under `dir`, recursively (sessions may be sub-folders), sorted by path. Hidden
 * entries (`.DS_Store`, `._x.jpg` AppleDouble files, `.git`) and non-image files (`Thumbs.db`,
 * `desktop.ini`, text) are skipped; unreadable entries and broken links are skipped too.
 */
async function imagesUnder(dir: string, depth = 0): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const path = join(dir, name);
    let kind: Awaited<ReturnType<typeof stat>>;
    try {
      kind = await stat(path);
    } catch {
      continue;
    }
    if (kind.isDirectory()) {
      if (depth < 4) found.push(...(await imagesUnder(path, depth + 1)));
    } else if (kind.isFile() && IMAGE_EXT.test(name)) found.push(path);
  }
  return found;
}

/**
 * `<dir>/<subject>/<image>` (or `<dir>/<subject>/<session>/<image>`); files directly in `<dir>`
 * are ignored, subjects sorted by name. Hand sub-folders (`<subject>/L/`, `<subject>/Right/`)
 * are identities of their own, named `<subject>/<hand>`.
 */
export async function listDataset(dir: string): Promise<Dataset> {
  let entries: string[];
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
    entries = await readdir(dir);
  } catch {
    throw new AppError('INVALID_REQUEST', `Cannot read dataset directory ${dir}`, {
      field: 'dir',
      reason: 'unreadable',
    });
  }
  const subjects: Dataset['subjects'] = [];
  for (const name of entries.sort()) {
    if (name.startsWith('.')) continue;
    const sub = join(dir, name);
    try {
      if (!(await stat(sub)).isDirectory()) continue;
    } catch {
      continue;
    }
    // `<subject>/L/`, `<subject>/right_hand/`…: a left and a right palm are two identities
    const hands: string[] = [];
    try {
      for (const h of (await readdir(sub)).sort())
        if (HAND_DIR.test(h) && (await stat(join(sub, h))).isDirectory()) hands.push(h);
    } catch {
      // unreadable sub-folder: imagesUnder skips it too
    }
    for (const h of hands) {
      const files = await imagesUnder(join(sub, h));
      if (files.length > 0) subjects.push({ name: `${name}/${h}`, files });
    }
    const files = (await imagesUnder(sub)).filter((f) => !hands.some((h) => f.startsWith(join(sub, h, '/'))));
    if (files.length > 0) subjects.push({ name, files });
  }
  if (subjects.length < 2) {
    throw new AppError('INVALID_REQUEST', `${dir} needs at least two <subject>/ folders with images`, {
      field: 'dir',
      reason: 'too_few_subjects',
    });
  }
  return { subjects };
}
