import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from '@palmid/shared/errors.ts';

const IMAGE_EXT = /\.(bmp|png|jpe?g|pgm|ppm|pnm|tiff?|webp)$/i;

export interface Dataset {
  subjects: Array<{ name: string; files: string[] }>;
}

/** `<dir>/<subject>/<image>`; files directly in `<dir>` are ignored, subjects sorted by name. */
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
    const sub = join(dir, name);
    if (!(await stat(sub)).isDirectory()) continue;
    const files = (await readdir(sub))
      .filter((f) => IMAGE_EXT.test(f))
      .sort()
      .map((f) => join(sub, f));
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
