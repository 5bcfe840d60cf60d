import { processCapture } from '@palmid/palm/capture/pipeline';
import { describe, expect, it } from 'vitest';
import { sideless } from '../../../../test/support/sideless-hand.ts';
import { sideRefusal } from './enroll.ts';

describe('agent enroll: the side of each capture', () => {
  it('takes a capture again when the pipeline cannot tell its side, or it is the other hand', async () => {
    // a camera profile accepts the capture for identification, with hand `unknown`
    const p = await processCapture(await sideless('grey-dark'), { sensor: 'grey-dark' });
    expect(p).toMatchObject({ ok: true, hand: 'unknown' });
    if (!p.ok) return;
    expect(sideRefusal(p.hand, 'right')).toMatch(/cannot tell which hand this is; .* whole right hand/);
    expect(sideRefusal('left', 'right')).toMatch(/looks like your left hand/);
    expect(sideRefusal('right', 'right')).toBeNull();
  }, 30_000);
});
