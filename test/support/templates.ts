import { randomBytes } from 'node:crypto';
import { encodeTemplate } from '@palmid/shared/palm/template.ts';

/** A well-formed random palm template, base64 (independent random codes never match each other). */
export function randomTemplate(): string {
  const words = (n: number) => new Uint32Array(randomBytes(n * 4).buffer);
  return Buffer.from(
    encodeTemplate({
      version: 1,
      hand: 'right',
      quality: 90,
      liveness: 95,
      code: words(6 * 32),
      mask: new Uint32Array(32).fill(0xffffffff),
      signature: words(4),
    }),
  ).toString('base64');
}
