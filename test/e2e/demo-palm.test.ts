import { renderPalm } from '@palmid/firmware-sim/synth/index';
import { processCapture } from '@palmid/palm/capture/pipeline';
import { DEMO_IDENTITY } from '@palmid/server/dev/demo';
import { DEMO_LEFT_PALM_TEMPLATES, DEMO_PALM_TEMPLATES } from '@palmid/server/dev/demo-palm';
import { createGallery } from '@palmid/server/modules/matching/index';
import { describe, expect, it } from 'vitest';

/**
 * The demo user's palm is a committed fixture (server/dev/demo-palm.ts) so that the server never runs the
 * agent's pipeline. This keeps the fixture honest: fresh captures of the identity the simulated kiosk
 * presents, through today's pipeline, must be identified as the demo user.
 */
describe('demo palm fixture', () => {
  it('fresh captures of the demo identity match the committed templates', async () => {
    const gallery = createGallery();
    for (const [i, b64] of DEMO_PALM_TEMPLATES.entries()) {
      const template = new Uint8Array(Buffer.from(b64, 'base64'));
      gallery.add({ palmId: `demo-${i}`, userId: 'demo-user', hand: 'right', template });
    }
    const fresh: string[] = [];
    let hits = 0;
    let tried = 0;
    for (let capture = 2000; capture < 2010 && tried < 3; capture++) {
      const p = await processCapture(await renderPalm({ identity: DEMO_IDENTITY, hand: 'right', capture }));
      if (!p.ok) continue;
      tried++;
      fresh.push(Buffer.from(p.template).toString('base64'));
      if (gallery.identify(p.template)?.userId === 'demo-user') hits++;
    }
    expect(tried).toBe(3);
    expect(
      hits,
      `the pipeline changed: refresh server/dev/demo-palm.ts, e.g. with ${JSON.stringify(fresh.slice(0, 2))}`,
    ).toBe(3);
  }, 120_000);

  it('a fresh capture of the demo identity’s left hand matches the committed left palm (the step-up hand)', async () => {
    const gallery = createGallery();
    for (const [i, b64] of DEMO_LEFT_PALM_TEMPLATES.entries())
      gallery.add({
        palmId: `demo-left-${i}`,
        userId: 'demo-user',
        hand: 'left',
        template: new Uint8Array(Buffer.from(b64, 'base64')),
      });
    for (let capture = 2000; capture < 2010; capture++) {
      const p = await processCapture(await renderPalm({ identity: DEMO_IDENTITY, hand: 'left', capture }));
      if (!p.ok) continue;
      expect(
        gallery.identify(p.template)?.userId,
        `the pipeline changed: refresh DEMO_LEFT_PALM_TEMPLATES with ${Buffer.from(p.template).toString('base64')}`,
      ).toBe('demo-user');
      return;
    }
    throw new Error('no usable left capture of the demo identity');
  }, 120_000);
});
