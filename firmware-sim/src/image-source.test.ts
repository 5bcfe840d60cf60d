import { describe, expect, it } from 'vitest';
import { createSynthPalmSource, synthPalmSource } from './image-source.ts';

describe('synthetic palm sources', () => {
  it('render the sensor profile they were made for, off the event loop', async () => {
    const request = { identity: 'src', hand: 'left', capture: 1, width: 160, height: 120 } as const;
    const sim = await synthPalmSource.render(request);
    const bright = createSynthPalmSource('grey-bright');
    expect(bright.name).toBe('synthetic-palm grey-bright');
    const f = await bright.render(request);
    expect(f.width).toBe(160);
    expect(f.data.length).toBe(160 * 120);
    // the simulated kiosk's background is dark, the bright board's is not
    expect(sim.data[0]!).toBeLessThan(40);
    expect(f.data[0]!).toBeGreaterThan(150);
  }, 60_000);
});
