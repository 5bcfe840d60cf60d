import { describe, expect, it } from 'vitest';
import { renderPalm, SENSORS } from './index.ts';
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

describe('renderPalm with a realistic sensor profile', () => {
  const spec = { identity: 'real', hand: 'right', capture: 1, width: 320, height: 240 } as const;
  const mean = (d: Uint8Array, pick: (i: number) => boolean) => {
    let s = 0;
    let n = 0;
    for (let i = 0; i < d.length; i++)
      if (pick(i)) {
        s += d[i]!;
        n++;
      }
    return s / n;
  };

  it('`simulator` is the default, and every profile is deterministic and differs from it', async () => {
    const sim = await renderPalm(spec);
    expect(differs(sim.data, (await renderPalm({ ...spec, sensor: 'simulator' })).data)).toBe(false);
    for (const sensor of SENSORS.filter((k) => k !== 'simulator')) {
      const a = await renderPalm({ ...spec, sensor });
      const b = await renderPalm({ ...spec, sensor });
      expect(a.data.length).toBe(320 * 240);
      expect(differs(a.data, b.data), sensor).toBe(false);
      expect(differs(a.data, sim.data), sensor).toBe(true);
    }
  });

  it('grey-dark: a large hand on black, fingers to the left, the forearm leaving the frame', async () => {
    const f = await renderPalm({ ...spec, sensor: 'grey-dark' });
    expect(f.rgb).toBeUndefined();
    expect(f.data[0]!).toBeLessThan(40); // top-left corner: background
    const column = (c: number) => Array.from({ length: 240 }, (_, r) => f.data[r * 320 + c]!);
    // the forearm crosses the right edge; a column through the fingers crosses several
    // bright fingers separated by dark gaps
    expect(column(319).filter((v) => v > 120).length).toBeGreaterThan(40);
    const fingers = column(50);
    let runs = 0;
    for (let r = 1; r < 240; r++) if (fingers[r]! > 110 && fingers[r - 1]! <= 110) runs++;
    expect(runs).toBeGreaterThanOrEqual(3);
    // the hand covers much of the frame (the simulated kiosk's covers about a fifth)
    expect(f.data.filter((v) => v > 100).length / f.data.length).toBeGreaterThan(0.3);
  });

  it('grey-bright: the hand is darker than the board around it', async () => {
    const f = await renderPalm({ ...spec, sensor: 'grey-bright' });
    expect(f.data[0]!).toBeGreaterThan(150);
    const palm = f.data[Math.round(240 * 0.6) * 320 + 160]!;
    expect(palm).toBeLessThan(f.data[0]! - 40);
  });

  it('colour: RGB skin, green pegs, and a grey frame that is its luma', async () => {
    const f = await renderPalm({ ...spec, sensor: 'colour' });
    const rgb = f.rgb!;
    expect(rgb.length).toBe(3 * 320 * 240);
    let green = 0;
    let skin = 0;
    let lumaError = 0;
    for (let i = 0; i < 320 * 240; i++) {
      const [r, g, b] = [rgb[3 * i]!, rgb[3 * i + 1]!, rgb[3 * i + 2]!];
      if (g > r + 40 && g > b + 10) green++;
      if (r > 90 && r > g + 20 && g > b) skin++;
      lumaError = Math.max(lumaError, Math.abs(f.data[i]! - (0.299 * r + 0.587 * g + 0.114 * b)));
    }
    expect(lumaError).toBeLessThanOrEqual(1);
    expect(green).toBeGreaterThan(30);
    expect(skin).toBeGreaterThan(0.1 * 320 * 240);
  });

  it('contactless-nir: softer focus than the grey camera (less fine-scale energy in the palm)', async () => {
    const energy = (d: Uint8Array) => {
      let e = 0;
      for (let r = 60; r < 180; r++)
        for (let c = 100; c < 220; c++) e += (d[r * 320 + c + 1]! - d[r * 320 + c]!) ** 2;
      return e / mean(d, (i) => i % 320 > 100 && i % 320 < 220 && i > 60 * 320 && i < 180 * 320) ** 2;
    };
    const vein = await renderPalm({ ...spec, sensor: 'contactless-nir' });
    const camera = await renderPalm({ ...spec, sensor: 'grey-bright' });
    expect(energy(vein.data)).toBeLessThan(energy(camera.data));
  });
});
