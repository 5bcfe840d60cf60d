import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_FRAME_BYTES, parseFrame } from './frames.ts';

/** A notification carrying `ch` repeated `units` times. */
function frameOf(ch: string, units: number): string {
  return JSON.stringify({ method: 'x', params: { s: ch.repeat(units) } });
}
const tooLarge = (text: string) => {
  const f = parseFrame(text);
  return f.kind === 'invalid' && f.reason === 'frame_too_large';
};

describe('parseFrame size bound', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('refuses exactly the frames over MAX_FRAME_BYTES in UTF-8, for 1- to 4-byte characters and lone surrogates, without Buffer', () => {
    const cases: Array<[string, number]> = [];
    // Around the byte bound for each width, and around the MAX/3 and MAX code-unit shortcuts.
    for (const [ch, width] of [
      ['a', 1],
      ['é', 2],
      ['€', 3],
      ['😀', 4],
      ['\ud800', 3],
    ] as const) {
      const overhead = Buffer.byteLength(frameOf(ch, 0), 'utf8');
      const atBound = Math.floor((MAX_FRAME_BYTES - overhead) / width);
      for (const n of [atBound - 1, atBound, atBound + 1, atBound + 2]) cases.push([ch, n]);
      const unitShortcut = Math.floor(MAX_FRAME_BYTES / 3 / ch.length) - overhead;
      for (const n of [unitShortcut - 1, unitShortcut, unitShortcut + 1]) cases.push([ch, n]);
    }
    const expected = cases.map(([ch, n]) => Buffer.byteLength(frameOf(ch, n), 'utf8') > MAX_FRAME_BYTES);
    expect(expected).toContain(true);
    expect(expected).toContain(false);
    vi.stubGlobal('Buffer', undefined);
    const got = cases.map(([ch, n]) => tooLarge(frameOf(ch, n)));
    vi.unstubAllGlobals();
    expect(got).toEqual(expected);
    expect(tooLarge('x'.repeat(MAX_FRAME_BYTES + 1))).toBe(true);
    expect(parseFrame(frameOf('a', 10)).kind).toBe('notification');
  });
});
