import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** WCAG 2 relative luminance and contrast ratio of two #rrggbb colours. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

const css = readFileSync(join(import.meta.dirname, '../../web/lib/app.css'), 'utf8');
const vars = Object.fromEntries([...css.matchAll(/--([a-z-]+):\s*(#[0-9a-f]{6})/g)].map((m) => [m[1], m[2]]));
const v = (name: string) => {
  const value = vars[name];
  if (!value) throw new Error(`app.css has no --${name}`);
  return value;
};

describe('web colours', () => {
  // [foreground, background] pairs that carry text on the pages
  const pairs: [string, string, string][] = [
    ['body text', v('text'), v('bg')],
    ['text on cards', v('text'), v('card')],
    ['muted text', v('muted'), v('bg')],
    ['muted text on cards', v('muted'), v('card')],
    ['buttons', v('accent-text'), v('accent')],
    ['secondary buttons and links', v('accent'), v('card')],
    ['success badges', v('ok'), v('ok-bg')],
    ['waiting badges', v('warn'), v('warn-bg')],
    ['failure badges', v('bad'), v('bad-bg')],
    ['errors on cards', v('bad'), v('card')],
    ['danger buttons', '#ffffff', v('bad')],
    ['header bar', '#dfe6ee', '#14202e'],
  ];
  it.each(pairs)('%s meet WCAG AA (4.5:1)', (_name, fg, bg) => {
    expect(contrast(fg, bg)).toBeGreaterThanOrEqual(4.5);
  });

  it('the focus ring is visible on light and dark backgrounds (3:1 for non-text)', () => {
    // amber outline plus a halo in the text colour: one of the two always stands out
    expect(Math.max(contrast(v('focus'), v('card')), contrast(v('text'), v('card')))).toBeGreaterThanOrEqual(
      3,
    );
    expect(contrast(v('focus'), '#14202e')).toBeGreaterThanOrEqual(3);
  });
});
