import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { redisUnavailable, startRedis, type TestRedis } from '../../../test/support/redis.ts';
import { describeNeeding } from '../../../test/support/requirements.ts';
import type { EventMeta, HubEvents } from './event-hub.ts';
import { RedisEventHub } from './redis-event-hub.ts';

describeNeeding(redisUnavailable())('RedisEventHub', () => {
  let redis: TestRedis;
  const clients: Redis[] = [];
  const hubs: RedisEventHub[] = [];
  const hub = async () => {
    const client = new Redis(redis.url);
    clients.push(client);
    // Every hub here hears the malformed messages of the last test: keep them quiet.
    const h = await RedisEventHub.connect(client, { onError: () => {} });
    hubs.push(h);
    return h;
  };
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const h of hubs) await h.close();
    for (const c of clients) await c.quit();
    await redis?.stop();
  });

  const collect = <K extends keyof HubEvents>(h: RedisEventHub, topic: K) => {
    const got: { payload: HubEvents[K]; meta: EventMeta }[] = [];
    h.subscribe(topic, (payload, meta) => got.push({ payload, meta }));
    return got;
  };
  const settle = () => new Promise((r) => setTimeout(r, 150));

  it('delivers every event exactly once on every instance, naming the publisher', async () => {
    const a = await hub();
    const b = await hub();
    const onA = collect(a, 'auth.updated');
    const onB = collect(b, 'auth.updated');
    a.publish('auth.updated', { vendorId: 'v1', authId: 'x1', status: 'scanning' });
    // Local delivery is synchronous, as with LocalEventHub.
    expect(onA).toEqual([
      { payload: { vendorId: 'v1', authId: 'x1', status: 'scanning' }, meta: { origin: a.instanceId } },
    ]);
    await expect.poll(() => onB.length, { timeout: 10_000 }).toBe(1);
    await settle(); // time for a duplicate to show up: there is none
    expect(onA).toHaveLength(1);
    expect(onB).toEqual([
      { payload: { vendorId: 'v1', authId: 'x1', status: 'scanning' }, meta: { origin: a.instanceId } },
    ]);
    expect(a.instanceId).not.toBe(b.instanceId);
  });

  it('keeps order per publisher and topics apart', async () => {
    const a = await hub();
    const b = await hub();
    const cancels = collect(b, 'scan.cancel');
    const gallery = collect(b, 'gallery.changed');
    for (let i = 0; i < 20; i++) a.publish('scan.cancel', { vendorId: 'v', pvsId: null, authId: `c${i}` });
    a.publish('gallery.changed', { userId: 'u1', action: 'remove' });
    await expect.poll(() => gallery.length, { timeout: 10_000 }).toBe(1); // published last, so all are in
    expect(cancels.map((e) => e.payload.authId)).toEqual(Array.from({ length: 20 }, (_, i) => `c${i}`));
    expect(gallery.map((e) => e.payload)).toEqual([{ userId: 'u1', action: 'remove' }]);
  });

  it('ignores malformed messages and survives a throwing listener', async () => {
    const errors: unknown[] = [];
    const client = new Redis(redis.url);
    clients.push(client);
    const b = await RedisEventHub.connect(client, { onError: (e) => errors.push(e) });
    hubs.push(b);
    const got = collect(b, 'scan.request');
    b.subscribe('scan.request', () => {
      throw new Error('listener bug');
    });
    const raw = new Redis(redis.url);
    clients.push(raw);
    await raw.publish('palmid:events:scan.request', '{not json');
    await raw.publish('palmid:events:scan.request', JSON.stringify({ p: {} }));
    await raw.publish('palmid:events:nope', JSON.stringify({ o: 'x', p: {} }));
    const a = await hub();
    a.publish('scan.request', { vendorId: 'v', pvsId: null, authId: 'r1' });
    await expect.poll(() => got.length, { timeout: 10_000 }).toBeGreaterThan(0); // after the bad ones
    expect(got.map((e) => e.payload.authId)).toEqual(['r1']);
    expect(errors.length).toBeGreaterThanOrEqual(2); // the bad JSON and the throwing listener
  });
});
