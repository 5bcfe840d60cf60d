import { AppError } from '@palmid/contracts/errors';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CODE_PLANES,
  decodeTemplate,
  encodeTemplate,
  GRID,
  type PalmTemplate,
  TEMPLATE_BYTES,
} from './template.ts';

const words = (n: number) => fc.uint32Array({ minLength: n, maxLength: n });
const template = fc.record({
  hand: fc.constantFrom('left' as const, 'right' as const, 'unknown' as const),
  quality: fc.integer({ min: 0, max: 100 }),
  liveness: fc.integer({ min: 0, max: 100 }),
  code: words(CODE_PLANES * GRID),
  mask: words(GRID).map((m) => m.map((w) => w | 0x0f0f0f0f)),
  signature: words(4),
});

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect(e.code).toBe('INVALID_REQUEST');
    expect(e.details.field).toBe('template');
    return String(e.details.reason);
  }
  return undefined;
}

describe('palm template format v1', () => {
  it('fits in 1 KB', () => {
    expect(TEMPLATE_BYTES).toBeLessThanOrEqual(1024);
  });

  it('round-trips every field', () => {
    fc.assert(
      fc.property(template, (t) => {
        const bytes = encodeTemplate({ version: 1, ...t } as PalmTemplate);
        expect(bytes.length).toBe(TEMPLATE_BYTES);
        const d = decodeTemplate(bytes);
        expect(d.hand).toBe(t.hand);
        expect(d.quality).toBe(t.quality);
        expect(d.liveness).toBe(t.liveness);
        expect([...d.code]).toEqual([...t.code]);
        expect([...d.mask]).toEqual([...t.mask]);
        expect([...d.signature]).toEqual([...t.signature]);
      }),
      { numRuns: 50 },
    );
  });

  it('rejects any single corrupted byte', () => {
    fc.assert(
      fc.property(template, fc.nat(TEMPLATE_BYTES - 1), fc.integer({ min: 1, max: 255 }), (t, at, flip) => {
        const bytes = encodeTemplate({ version: 1, ...t } as PalmTemplate);
        bytes[at] = bytes[at]! ^ flip;
        expect(reasonOf(() => decodeTemplate(bytes))).toBeDefined();
      }),
      { numRuns: 200 },
    );
  });

  it('names the problem for empty, truncated, foreign and other-version input', () => {
    const good = encodeTemplate({
      version: 1,
      hand: 'right',
      quality: 90,
      liveness: 90,
      code: new Uint32Array(CODE_PLANES * GRID),
      mask: new Uint32Array(GRID).fill(0xffffffff),
      signature: new Uint32Array(4),
    });
    expect(reasonOf(() => decodeTemplate(new Uint8Array(0)))).toBe('truncated');
    expect(reasonOf(() => decodeTemplate(good.subarray(0, 500)))).toBe('truncated');
    expect(
      reasonOf(() => decodeTemplate(new TextEncoder().encode('hello, this is not a palm template'))),
    ).toBe('bad_magic');
    const v2 = Uint8Array.from(good);
    v2[2] = 2;
    expect(reasonOf(() => decodeTemplate(v2))).toBe('unsupported_version');
    expect(reasonOf(() => decodeTemplate('abc'))).toBe('not_bytes');
  });

  it('carries its coding in byte 8: `wide` when absent (templates written before it), `fine`; refuses an unknown one', () => {
    const base = {
      version: 1,
      hand: 'right' as const,
      quality: 90,
      liveness: 90,
      code: new Uint32Array(CODE_PLANES * GRID),
      mask: new Uint32Array(GRID).fill(0xffffffff),
      signature: new Uint32Array(4),
    };
    const wide = encodeTemplate(base);
    expect(wide[8]).toBe(0);
    expect(decodeTemplate(wide).coding).toBe('wide');
    const fine = encodeTemplate({ ...base, coding: 'fine' });
    expect(fine[8]).toBe(1);
    expect(decodeTemplate(fine).coding).toBe('fine');
    expect(decodeTemplate(fine, 'fine').coding).toBe('fine');
    // a network of one coding refuses the other, by name
    expect(reasonOf(() => decodeTemplate(fine, 'wide'))).toBe('wrong_coding');
    expect(reasonOf(() => decodeTemplate(wide, 'fine'))).toBe('wrong_coding');
    const unknown = Uint8Array.from(fine);
    unknown[8] = 2;
    expect(reasonOf(() => decodeTemplate(unknown))).toBe('bad_header');
  });

  it('never decodes random bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 1100 }), (bytes) => {
        expect(reasonOf(() => decodeTemplate(bytes))).toBeDefined();
      }),
    );
  });
});
