import { randomFillSync } from 'node:crypto';

/** Random bytes for 256 ids at a time, refilled from the CSPRNG (as `crypto.randomUUID` buffers its own). */
const POOL_IDS = 256;
const pool = Buffer.alloc(16 * POOL_IDS);
let next = POOL_IDS;
const text = Buffer.alloc(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** Offsets in the text of the 16 bytes' hex pairs (8-4-4-4-12). */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
text[8] = text[13] = text[18] = text[23] = 0x2d;

/**
 * A random (version 4) UUID, the same text as `crypto.randomUUID()` from the same CSPRNG, written into one
 * buffer and read out as one flat string. `crypto.randomUUID` joins 20 pieces into a string per call (about
 * 600 bytes of garbage that the request id then flattens again); a request id per request made it one of
 * the largest allocations of an authenticated read (docs/performance.md).
 */
export function randomRequestId(): string {
  if (next === POOL_IDS) {
    randomFillSync(pool);
    next = 0;
  }
  const base = 16 * next++;
  for (let i = 0; i < 16; i++) {
    let b = pool[base + i] as number;
    if (i === 6) b = (b & 0x0f) | 0x40;
    else if (i === 8) b = (b & 0x3f) | 0x80;
    const at = AT[i] as number;
    text[at] = HEX[b >> 4] as number;
    text[at + 1] = HEX[b & 0x0f] as number;
  }
  // Zero the bytes used, so no id can be read back from the pool.
  pool.fill(0, base, base + 16);
  return text.toString('latin1', 0, 36);
}
