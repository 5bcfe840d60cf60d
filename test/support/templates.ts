import { randomBytes } from 'node:crypto';
import { decodeTemplate, encodeTemplate, GRID, type TemplateCoding } from '@palmid/palm/template';

/** A well-formed random palm template, base64 (independent random codes never match each other). */
export function randomTemplate(coding: TemplateCoding = 'wide'): string {
  const words = (n: number) => new Uint32Array(randomBytes(n * 4).buffer);
  return Buffer.from(
    encodeTemplate({
      version: 1,
      coding,
      hand: 'right',
      quality: 90,
      liveness: 95,
      code: words(6 * 32),
      mask: new Uint32Array(32).fill(0xffffffff),
      signature: words(4),
    }),
  ).toString('base64');
}

/**
 * A deterministic impostor filler for gallery tests: each 8 × 8 tile of the grid from one of the
 * strangers' templates (seeded choice).
 */
export function mosaic(strangers: Uint8Array[], seed: number): Uint8Array {
  const src = strangers.map((t) => decodeTemplate(t));
  const code = new Uint32Array(6 * GRID);
  const mask = new Uint32Array(GRID);
  let s = (seed * 2654435761 + 1) >>> 0;
  for (let tile = 0; tile < 16; tile++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const t = src[s % src.length]!;
    const bits = 0xff << ((tile % 4) * 8);
    for (let r = (tile >> 2) * 8; r < (tile >> 2) * 8 + 8; r++) {
      mask[r] = (mask[r]! & ~bits) | (t.mask[r]! & bits);
      for (let p = 0; p < 6; p++)
        code[p * GRID + r] = (code[p * GRID + r]! & ~bits) | (t.code[p * GRID + r]! & bits);
    }
  }
  return encodeTemplate({ ...src[0]!, code, mask });
}
