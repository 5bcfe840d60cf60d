import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * GitHub-flavoured Markdown splits a table row at every `|` not preceded by a backslash, inside backticks
 * too: a row with more cells than its header loses its tail. Checked the way the renderer reads it.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const files = [
  'README.md',
  ...['docs', 'docs/lab'].flatMap((dir) =>
    readdirSync(join(ROOT, dir))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `${dir}/${f}`),
  ),
];

function cells(row: string): number {
  const inner = row
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '');
  return inner.split(/(?<!\\)\|/).length;
}

describe('Markdown tables render as written', () => {
  it.each(files)('%s: every row has as many cells as its header', (file) => {
    const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
    let inFence = false;
    for (let i = 0; i < lines.length; i++) {
      if (/^\s*```/.test(lines[i]!)) inFence = !inFence;
      if (inFence) continue;
      const header = lines[i]!;
      const sep = lines[i + 1];
      if (!header.trim().startsWith('|') || !sep || !/^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/.test(sep))
        continue;
      const width = cells(header);
      for (let j = i + 2; j < lines.length && lines[j]!.trim().startsWith('|'); j++) {
        expect(cells(lines[j]!), `${file}:${j + 1}: ${lines[j]!.slice(0, 60)}`).toBe(width);
      }
    }
  });
});
