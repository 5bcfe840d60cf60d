import { WireChannel } from '@palmid/contracts/wire/channel';
import { afterEach, describe, expect, it } from 'vitest';
import { listenControl } from './control.ts';
import { FirmwareSimulator } from './device.ts';
import { testPatternSource } from './image-source.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const sim = new FirmwareSimulator({ source: testPatternSource });
  const control = await listenControl(sim, 0);
  cleanups.push(
    () => sim.stop(),
    () => control.close(),
  );
  const post = async (path: string, body?: unknown) => {
    const res = await fetch(`${control.url}${path}`, {
      method: 'POST',
      ...(body !== undefined
        ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
        : {}),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  return { sim, control, post };
}

describe('simulator control port', () => {
  it('presents and removes palms, sets the walk-up palm, reports state', async () => {
    const { sim, control, post } = await setup();
    expect((await post('/present', { identity: 'alice', hand: 'left', attack: 'screen' })).status).toBe(200);
    expect(sim.snapshot().palm).toEqual({ identity: 'alice', hand: 'left', attack: 'screen' });
    const state = (await (await fetch(`${control.url}/state`)).json()) as { palm?: { identity: string } };
    expect(state.palm?.identity).toBe('alice');
    await post('/remove');
    expect(sim.snapshot().palm).toBeUndefined();
    expect(await (await fetch(`${control.url}/captures`)).json()).toEqual([]);
    // a capture shows up with its timings
    await post('/present', { identity: 'alice', hand: 'left' });
    const link = sim.connectMemory();
    const channel = new WireChannel((b) => link.write(b));
    link.onData((b) => channel.receive(b));
    await channel.request({ kind: 'START_CAPTURE', token: 1 }, 'CAPTURE_STARTED');
    await new Promise((r) => sim.once('state', r));
    const [capture] = (await (await fetch(`${control.url}/captures`)).json()) as Record<string, unknown>[];
    expect(capture).toMatchObject({ captureId: 1, exposureMs: 300, outcome: 'ready' });
    expect(capture!.doneMs as number).toBeGreaterThanOrEqual(300);
    expect((await post('/auto-present', { off: true })).status).toBe(200);
  });

  it('injects and clears faults, unplugs for a while', async () => {
    const { sim, post } = await setup();
    await post('/fault', { kind: 'crc-noise', probability: 0.5 });
    expect(sim.snapshot().faults).toEqual([{ kind: 'crc-noise', probability: 0.5 }]);
    await post('/clear-faults');
    expect(sim.snapshot().faults).toEqual([]);
    const back = new Promise((r) => sim.once('replugged', r));
    await post('/unplug', { ms: 30 });
    expect(sim.isPlugged).toBe(false);
    await back;
    expect(sim.isPlugged).toBe(true);
  });

  it('rejects bad bodies with 400 and unknown routes with 404, and keeps serving', async () => {
    const { post } = await setup();
    expect((await post('/present', { identity: 'a', hand: 'middle' })).status).toBe(400);
    expect((await post('/fault', { kind: 'meteor' })).status).toBe(400);
    expect((await post('/nowhere')).status).toBe(404);
    expect((await post('/present', { identity: 'a', hand: 'right' })).status).toBe(200);
  });
});
