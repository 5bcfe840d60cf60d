import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from '@palmid/contracts/errors';

const IMAGE_EXT = /\.(bmp|dib|png|jpe?g|jfif|pgm|ppm|pnm|tiff?|webp|gif)$/i;

/** Sub-folders that hold one hand of a subject (a separate identity), not a session. */
const HAND_DIR = /^(l|r|left|right)([ _-]?(hand|palm))?$/i;

export interface Dataset {
  /**
   * `recaptures`: after `mergeSameIdentities`, how many of the last `files` came from merged-in
   * labels (re-captures of the person filed under another label, typically another session).
   */
  subjects: Array<{ name: string; files: string[]; recaptures?: number }>;
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

/** One person filed under two labels: `into` keeps the identity, `from`'s images join it. */
export interface SameIdentity {
  into: string;
  from: string;
}

/**
 * The dataset with each `from` identity merged into its `into` identity: the two labels' images
 * become one subject, so their cross pairs count as genuine pairs instead of impostor pairs.
 * For a development set that files one person twice (found with `palm look-alike`; see
 * docs/palm-pipeline.md, "Look-alike identities"). Every label must exist and be merged once.
 */
export function mergeSameIdentities(ds: Dataset, same: readonly SameIdentity[]): Dataset {
  const byName = new Map(
    ds.subjects.map((s) => [s.name, { name: s.name, files: [...s.files], recaptures: s.recaptures ?? 0 }]),
  );
  const used = new Set<string>();
  for (const { into, from } of same) {
    for (const label of [into, from])
      if (!byName.has(label))
        throw new AppError(
          'INVALID_REQUEST',
          `--same names "${label}", which is no identity of the dataset`,
          {
            field: 'same',
            reason: 'unknown_label',
          },
        );
    if (used.has(from))
      throw new AppError('INVALID_REQUEST', `--same merges "${from}" twice or merges into it`, {
        field: 'same',
        reason: 'duplicate_label',
      });
    used.add(from);
  }
  for (const { into } of same)
    if (used.has(into))
      throw new AppError('INVALID_REQUEST', `--same merges "${into}" away and into it at once`, {
        field: 'same',
        reason: 'duplicate_label',
      });
  for (const { into, from } of same) {
    const target = byName.get(into)!;
    const moved = byName.get(from)!.files;
    target.files.push(...moved);
    target.recaptures += moved.length;
  }
  const subjects = ds.subjects
    .filter((s) => !used.has(s.name))
    .map((s) => {
      const { recaptures, ...rest } = byName.get(s.name)!;
      return recaptures > 0 ? { ...rest, recaptures } : rest;
    });
  if (subjects.length < 2)
    throw new AppError('INVALID_REQUEST', '--same leaves fewer than two identities', {
      field: 'same',
      reason: 'too_few_subjects',
    });
  return { subjects };
}
