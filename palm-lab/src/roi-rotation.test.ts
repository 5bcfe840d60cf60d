import { renderRoi } from '@palmid/firmware-sim/synth/roi';
import type { GrayImage } from '@palmid/palm/capture/image-io';
import { bilinear } from '@palmid/palm/capture/roi-input';
import {
  ROI_MATCH_THRESHOLD,
  ROI_ROTATION_ANGLES,
  ROI_SCALE_VARIANTS,
  rotateRoi,
  rotationTolerantDistance,
  scaleRoi,
} from '@palmid/palm/capture/roi-rotation';
import { extractRoiTemplate, extractRoiTemplates } from '@palmid/palm/capture/roi-template';
import { distanceToScore, packedDistance, packTemplate } from '@palmid/palm/match';
import { decodeTemplate } from '@palmid/palm/template';
import { describe, expect, it } from 'vitest';
import type { Dataset } from './eval/dataset.ts';
import { evaluate } from './eval/evaluate.ts';

function ramp(n: number): Float32Array {
  const out = new Float32Array(n * n);
  for (let y = 0; y < n; y++)
    for (let x = 0; x < n; x++) out[y * n + x] = 3 * x + 0.5 * y * y + Math.sin(x * y);
  return out;
}

/** An 8-bit image magnified by `zoom` about its centre (the convention of `scaleRoi`). */
function zoomImage(img: GrayImage, zoom: number): GrayImage {
  const c = (img.width - 1) / 2;
  const data = new Uint8Array(img.width * img.height);
  for (let y = 0; y < img.height; y++)
    for (let x = 0; x < img.width; x++)
      data[y * img.width + x] = Math.round(bilinear(img, c + (x - c) / zoom, c + (y - c) / zoom));
  return { width: img.width, height: img.height, data };
}

/** An 8-bit image rotated by `deg` about its centre (the same convention as `rotateRoi`). */
function rotateImage(img: GrayImage, deg: number): GrayImage {
  const a = (deg * Math.PI) / 180;
  const c = (img.width - 1) / 2;
  const data = new Uint8Array(img.width * img.height);
  for (let y = 0; y < img.height; y++)
    for (let x = 0; x < img.width; x++) {
      const u = x - c;
      const v = y - c;
      const sx = c + Math.cos(a) * u + Math.sin(a) * v;
      const sy = c - Math.sin(a) * u + Math.cos(a) * v;
      data[y * img.width + x] = Math.round(bilinear(img, sx, sy));
    }
  return { width: img.width, height: img.height, data };
}

const pack = (templates: Uint8Array[]): Uint32Array => {
  const words = templates.map((t) => packTemplate(decodeTemplate(t)));
  const out = new Uint32Array(words.length * words[0]!.length);
  for (const [i, w] of words.entries()) out.set(w, i * w.length);
  return out;
};

describe('rotateRoi', () => {
  it('is the identity at 0° (a copy)', () => {
    const roi = ramp(16);
    const r = rotateRoi(roi, 0, 16);
    expect(r).toEqual(roi);
    expect(r).not.toBe(roi);
  });

  it('is an exact index permutation at 90°', () => {
    const n = 16;
    const roi = ramp(n);
    const r = rotateRoi(roi, 90, n);
    for (let y = 0; y < n; y++)
      for (let x = 0; x < n; x++) expect(r[y * n + x]).toBeCloseTo(roi[(n - 1 - x) * n + y]!, 3);
  });

  it('+θ then −θ restores the centre of a smooth image', () => {
    const n = 64;
    const roi = new Float32Array(n * n);
    for (let y = 0; y < n; y++)
      for (let x = 0; x < n; x++) roi[y * n + x] = 100 + 40 * Math.sin(x / 5 + y / 7);
    const back = rotateRoi(rotateRoi(roi, 8, n), -8, n);
    let worst = 0;
    for (let y = 16; y < 48; y++)
      for (let x = 16; x < 48; x++) worst = Math.max(worst, Math.abs(back[y * n + x]! - roi[y * n + x]!));
    expect(worst).toBeLessThan(2);
  });
});

describe('scaleRoi', () => {
  it('is the identity at zoom 1 (a copy)', () => {
    const roi = ramp(16);
    const r = scaleRoi(roi, 1, 16);
    expect(r).toEqual(roi);
    expect(r).not.toBe(roi);
  });

  it('magnifies about the centre: a linear ramp keeps its centre and steepens by the zoom', () => {
    const n = 33;
    const roi = new Float32Array(n * n);
    for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) roi[y * n + x] = 10 * x;
    const z = scaleRoi(roi, 1.25, n);
    expect(z[16 * n + 16]).toBeCloseTo(160, 3);
    expect(z[16 * n + 20]! - z[16 * n + 12]!).toBeCloseTo((80 / 1.25) * 1, 3);
  });
});

describe('rotation-tolerant ROI matching', () => {
  it('codes the 0° variant like extractRoiTemplate, in one batch of ROI_ROTATION_ANGLES', async () => {
    const img = renderRoi({ identity: 'rot-a', style: 'contactless', session: 1, sample: 0 });
    const ts = await extractRoiTemplates(img);
    expect(ts).toHaveLength(ROI_ROTATION_ANGLES.length + ROI_SCALE_VARIANTS.length);
    expect(await extractRoiTemplates(img, [0])).toHaveLength(1);
    expect(ROI_ROTATION_ANGLES[0]).toBe(0);
    const plain = packTemplate(decodeTemplate(await extractRoiTemplate(img)));
    const first = packTemplate(decodeTemplate(ts[0]!));
    expect(packedDistance(plain, 0, first, 0)).toBeLessThan(0.01);
  });

  it('a rotated ROI matches the original better with variants than without', async () => {
    for (const deg of [-8, 8]) {
      const img = renderRoi({ identity: 'rot-b', style: 'contactless', session: 1, sample: 0 });
      const gallery = pack([await extractRoiTemplate(img)]);
      const variants = await extractRoiTemplates(rotateImage(img, deg));
      const probe = pack(variants);
      const plain = packedDistance(gallery, 0, probe, 0);
      const tolerant = rotationTolerantDistance(gallery, 0, probe, 0, variants.length);
      expect(tolerant).toBeLessThan(plain - 0.03);
      // never above the plain distance: the 0° variant is one of the candidates
      expect(tolerant).toBeLessThanOrEqual(plain);
    }
  });

  it('a magnified ROI matches the original better with the zoom variant than without', async () => {
    const img = renderRoi({ identity: 'rot-z', style: 'contactless', session: 1, sample: 0 });
    const gallery = pack([await extractRoiTemplate(img)]);
    const zoomed = zoomImage(img, ROI_SCALE_VARIANTS[0]!);
    const withZoom = await extractRoiTemplates(zoomed);
    const rotationsOnly = await extractRoiTemplates(zoomed, ROI_ROTATION_ANGLES, {}, []);
    const a = rotationTolerantDistance(gallery, 0, pack(rotationsOnly), 0, rotationsOnly.length);
    // the gallery's own zoom variant against the zoomed probe: both directions, as eval scores
    const galleryVariants = pack(await extractRoiTemplates(img));
    const reverse = packedDistance(
      galleryVariants,
      ROI_ROTATION_ANGLES.length * gallery.length,
      pack([await extractRoiTemplate(zoomed)]),
      0,
    );
    const b = rotationTolerantDistance(gallery, 0, pack(withZoom), 0, withZoom.length);
    expect(b).toBeLessThanOrEqual(a);
    expect(Math.min(b, reverse)).toBeLessThan(a - 0.02);
  });

  it('keeps different palms apart', async () => {
    const a = pack([
      await extractRoiTemplate(renderRoi({ identity: 'rot-c', style: 'contact', session: 1, sample: 0 })),
    ]);
    const v = await extractRoiTemplates(
      renderRoi({ identity: 'rot-d', style: 'contact', session: 2, sample: 0 }),
    );
    const d = rotationTolerantDistance(a, 0, pack(v), 0, v.length);
    expect(distanceToScore(d)).toBeLessThan(ROI_MATCH_THRESHOLD);
  });

  it('eval scores the minimum over both images’ variants', async () => {
    const subjects = [0, 1, 2, 3];
    const dataset: Dataset = {
      subjects: subjects.map((s) => ({ name: `s${s}`, files: [`${s}/1`, `${s}/2`] })),
    };
    const image = (file: string): GrayImage => {
      const [s, session] = file.split('/').map(Number) as [number, 1 | 2];
      const img = renderRoi({ identity: `rot-e${s}`, style: 'contact', session, sample: 0 });
      return session === 2 ? rotateImage(img, 8) : img;
    };
    const plain = await evaluate(dataset, async (f) => ({ template: await extractRoiTemplate(image(f)) }));
    const rotated = await evaluate(dataset, async (f) => {
      const [template, ...variants] = await extractRoiTemplates(image(f));
      return { template: template!, variants };
    });
    expect(rotated.report.genuine_pairs).toBe(4);
    expect(rotated.report.impostor_pairs).toBe(24);
    for (const [i, g] of rotated.extra.genuine.entries())
      expect(g).toBeLessThanOrEqual(plain.extra.genuine[i]! + 0.01);
    const mean = (a: Float64Array) => a.reduce((s, x) => s + x, 0) / a.length;
    expect(mean(rotated.extra.genuine)).toBeLessThan(mean(plain.extra.genuine) - 0.02);
    expect(Math.min(...rotated.extra.impostor)).toBeGreaterThan(Math.max(...rotated.extra.genuine));
  });
});
