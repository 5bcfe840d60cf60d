import { encodeResponses } from '@palmid/palm/capture/coding';
import { ORIENTATIONS as AGENT_ORIENTATIONS, CODING_SCALES, SCALES } from '@palmid/palm/capture/gabor';
import { stage1Descriptor } from '@palmid/palm/gallery/stage1';
import { cellCode, ORIENTATION_OF_CODE, ORIENTATIONS } from '@palmid/palm/orientation-code';
import { CODE_PLANES, GRID, SIGNATURE_WORDS, TEMPLATE_CODINGS } from '@palmid/palm/template';
import { describe, expect, it } from 'vitest';

/**
 * The template's bit encoding is a contract between the agent's coder and the server's first search
 * stage (@palmid/palm/orientation-code): what one writes, the other must read back, in every coding.
 */
describe.each(TEMPLATE_CODINGS)(
  'template bit encoding (%s coding): agent coder ↔ server stage 1',
  (coding) => {
    const cells = GRID * GRID;
    const scales = CODING_SCALES[coding];
    /** Gabor responses in which orientation `winner(s, i)` wins at every cell of response scale s. */
    const winner = (s: number, i: number) => (i * 7 + s * 3 + (i >> 5)) % ORIENTATIONS;
    const responses = new Float32Array(SCALES.length * AGENT_ORIENTATIONS * cells);
    for (let s = 0; s < SCALES.length; s++)
      for (let o = 0; o < AGENT_ORIENTATIONS; o++)
        for (let i = 0; i < cells; i++)
          responses[(s * AGENT_ORIENTATIONS + o) * cells + i] =
            o === winner(s, i) ? -10 : -1 - ((o + i) % 3) / 10;
    const coded = encodeResponses(responses, 0, 1, undefined, coding);

    it('agree on the shape: orientations, coded scales and code planes', () => {
      expect(AGENT_ORIENTATIONS).toBe(ORIENTATIONS);
      expect(scales.length * 3).toBe(CODE_PLANES);
      for (const s of scales) expect(s).toBeLessThan(SCALES.length);
    });

    it("every cell the agent codes decodes to the orientation that won at the coding's scale", () => {
      const wrong: string[] = [];
      for (let k = 0; k < scales.length; k++)
        for (let i = 0; i < cells; i++) {
          const got = ORIENTATION_OF_CODE[cellCode(coded.code, k, i >> 5, i & 31)];
          if (got !== winner(scales[k]!, i))
            wrong.push(`plane group ${k} cell ${i}: ${got} ≠ ${winner(scales[k]!, i)}`);
        }
      expect(wrong).toEqual([]);
    });

    it('stage 1 sees the orientation histogram the agent coded', () => {
      // One orientation wins everywhere at each coded scale: each block's histogram is all in that
      // bin, so every cut of that bin is set and no other bit is.
      const only = [2, 5];
      const single = new Float32Array(responses.length).fill(-1);
      for (let k = 0; k < scales.length; k++)
        for (let i = 0; i < cells; i++)
          single[(scales[k]! * AGENT_ORIENTATIONS + only[k]!) * cells + i] = -10 - (i % 5);
      const c = encodeResponses(single, 0, 0.5, undefined, coding);
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
      for (let k = 0; k < scales.length; k++)
        for (let block = 0; block < 16; block++)
          for (let cut = 0; cut < 4; cut++)
            expected.push(((k * 16 + block) * ORIENTATIONS + only[k]!) * 4 + cut);
      expect(bits).toEqual(expected);
    });
  },
);
