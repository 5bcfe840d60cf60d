import { encodeResponses } from '@palmid/palm/capture/coding';
import { ORIENTATIONS as AGENT_ORIENTATIONS, SCALES } from '@palmid/palm/capture/gabor';
import { stage1Descriptor } from '@palmid/palm/gallery/stage1';
import { cellCode, ORIENTATION_OF_CODE, ORIENTATIONS } from '@palmid/palm/orientation-code';
import { CODE_PLANES, GRID, SIGNATURE_WORDS } from '@palmid/palm/template';
import { describe, expect, it } from 'vitest';

/**
 * The template's bit encoding is a contract between the agent's coder and the server's first search
 * stage (@palmid/palm/orientation-code): what one writes, the other must read back.
 */
describe('template bit encoding: agent coder ↔ server stage 1', () => {
  const cells = GRID * GRID;
  /** Gabor responses in which orientation `winner(s, i)` wins at every cell (most negative response). */
  const winner = (s: number, i: number) => (i * 7 + s * 3 + (i >> 5)) % ORIENTATIONS;
  const responses = new Float32Array(SCALES.length * AGENT_ORIENTATIONS * cells);
  for (let s = 0; s < SCALES.length; s++)
    for (let o = 0; o < AGENT_ORIENTATIONS; o++)
      for (let i = 0; i < cells; i++)
        responses[(s * AGENT_ORIENTATIONS + o) * cells + i] =
          o === winner(s, i) ? -10 : -1 - ((o + i) % 3) / 10;
  const coded = encodeResponses(responses, 0, 1);

  it('agree on the shape: orientations, scales and code planes', () => {
    expect(AGENT_ORIENTATIONS).toBe(ORIENTATIONS);
    expect(SCALES.length * 3).toBe(CODE_PLANES);
  });

  it('every cell the agent codes decodes to the orientation that won', () => {
    const wrong: string[] = [];
    for (let s = 0; s < SCALES.length; s++)
      for (let i = 0; i < cells; i++) {
        const got = ORIENTATION_OF_CODE[cellCode(coded.code, s, i >> 5, i & 31)];
        if (got !== winner(s, i)) wrong.push(`scale ${s} cell ${i}: ${got} ≠ ${winner(s, i)}`);
      }
    expect(wrong).toEqual([]);
  });

  it('stage 1 sees the orientation histogram the agent coded', () => {
    // One orientation wins everywhere at each scale: each block's histogram is all in that bin, so
    // every cut of that bin is set and no other bit is.
    const only = [2, 5];
    const single = new Float32Array(responses.length).fill(-1);
    for (let s = 0; s < SCALES.length; s++)
      for (let i = 0; i < cells; i++) single[(s * AGENT_ORIENTATIONS + only[s]!) * cells + i] = -10 - (i % 5);
    const c = encodeResponses(single, 0, 0.5);
    const out = new Uint32Array(24);
    stage1Descriptor(
      {
        version: 1,
        hand: 'right',
        quality: 100,
        liveness: 100,
        ...c,
        signature: new Uint32Array(SIGNATURE_WORDS),
      },
      out,
      0,
    );
    const bits: number[] = [];
    for (let b = 0; b < 768; b++) if ((out[b >> 5]! >>> (b & 31)) & 1) bits.push(b);
    const expected: number[] = [];
    for (let s = 0; s < SCALES.length; s++)
      for (let block = 0; block < 16; block++)
        for (let cut = 0; cut < 4; cut++)
          expected.push(((s * 16 + block) * ORIENTATIONS + only[s]!) * 4 + cut);
    expect(bits).toEqual(expected);
  });
});
