import { describe, expect, it } from 'vitest';
import { renderPalm } from './index.ts';
import { renderRoi } from './roi.ts';

const differs = (a: Uint8Array, b: Uint8Array) => a.some((v, i) => v !== b[i]);

describe('renderPalm', () => {
  it('is deterministic per (identity, hand, capture) and defaults to 320 × 240', async () => {
    const a = await renderPalm({ identity: 'syn', hand: 'right', capture: 1 });
    const b = await renderPalm({ identity: 'syn', hand: 'right', capture: 1 });
    expect(a.width).toBe(320);
    expect(a.height).toBe(240);
    expect(a.data.length).toBe(320 * 240);
    expect(differs(a.data, b.data)).toBe(false);
  });

  it('varies with capture, hand, identity and attack', async () => {
    const base = await renderPalm({ identity: 'syn', hand: 'right', capture: 1 });
    for (const other of [
      { identity: 'syn', hand: 'right', capture: 2 },
      { identity: 'syn', hand: 'left', capture: 1 },
      { identity: 'syn2', hand: 'right', capture: 1 },
      { identity: 'syn', hand: 'right', capture: 1, attack: 'print' },
    ] as const) {
      expect(differs(base.data, (await renderPalm(other)).data)).toBe(true);
    }
  });

  it('honours the frame size and shows a bright hand on a dark background', async () => {
    const f = await renderPalm({ identity: 'syn', hand: 'left', capture: 1, width: 160, height: 120 });
    expect(f.data.length).toBe(160 * 120);
    expect(f.data[0]!).toBeLessThan(40);
    expect(f.data[Math.floor(120 * 0.6) * 160 + 80]!).toBeGreaterThan(80);
    await expect(renderPalm({ identity: 'x', hand: 'left', capture: 1, width: 3 })).rejects.toThrow(
      RangeError,
    );
  });
});

describe('renderRoi', () => {
  it('renders square ROIs of the asked size, deterministically', () => {
    const a = renderRoi({ identity: 'r', style: 'vein', session: 2, sample: 1, size: 96 });
    expect(a.width).toBe(96);
    expect(
      differs(a.data, renderRoi({ identity: 'r', style: 'vein', session: 2, sample: 1, size: 96 }).data),
    ).toBe(false);
  });
});
