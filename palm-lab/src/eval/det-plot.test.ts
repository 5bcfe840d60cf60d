import { describe, expect, it } from 'vitest';
import { detSvg } from './det-plot.ts';
import { errorRates } from './metrics.ts';

describe('DET plot', () => {
  it('covers only the measured FAR range and says so when FRR is 0', () => {
    const impostor = Array.from({ length: 1801 }, (_, i) => 0.4 + i / 1e5);
    const genuine = Array.from({ length: 50 }, (_, i) => 0.1 + i / 1000);
    const r = errorRates(genuine, impostor);
    const svg = detSvg([
      {
        label: 'palmid',
        points: r.det,
        genuinePairs: genuine.length,
        impostorPairs: impostor.length,
        eer: r.eer,
        operating: { threshold: 0.48, far: 0, frr: 0 },
      },
    ]);
    expect(svg).toContain('>1/1801<');
    expect(svg).not.toMatch(/>1e-[4-9]</); // nothing below 1 / 1801
    expect(svg).toContain('FRR = 0 at every measured FAR (50 genuine pairs');
    expect(svg).toContain('<polyline'); // the curve is drawn, in the FRR = 0 band
    expect(svg).toMatch(/<circle [^>]*r="5"/); // EER
    expect(svg).toContain('threshold 0.48: FAR &lt; 5.6e-4, FRR 0');
  });

  it('draws a curve with errors on log axes and names a set without pairs', () => {
    const impostor = Array.from({ length: 1000 }, (_, i) => 0.3 + i / 5000);
    const genuine = Array.from({ length: 200 }, (_, i) => 0.1 + i / 800);
    const r = errorRates(genuine, impostor);
    const svg = detSvg([
      { label: 'a', points: r.det, genuinePairs: 200, impostorPairs: 1000, eer: r.eer },
      { label: 'b', points: [], genuinePairs: 0, impostorPairs: 0 },
    ]);
    expect(r.eer).toBeGreaterThan(0);
    expect(svg).not.toContain('FRR = 0 at every');
    expect(svg).toContain('b: not measurable (0 genuine, 0 impostor pairs)');
  });

  it('marks the N = 1e6 bar, on the left end with its FMR when that lies below the measured range', () => {
    const impostor = Array.from({ length: 1000 }, (_, i) => 0.3 + i / 5000);
    const genuine = Array.from({ length: 200 }, (_, i) => 0.1 + i / 800);
    const r = errorRates(genuine, impostor);
    const svg = detSvg([
      {
        label: 'palmid',
        points: r.det,
        genuinePairs: 200,
        impostorPairs: 1000,
        eer: r.eer,
        identification: { gallery: 1e6, distance: 0.2774, far: 1e-10, frr: 0.05 },
      },
    ]);
    expect(svg).toContain(
      '▲ N = 1e+6 bar (distance 0.277): FMR 1.0e-10 (tail model, off the axis), FRR 5.00 %',
    );
    expect(svg).toContain('← FMR 1.0e-10');
  });
});
