import { seedVendor } from '@palmid/server/dev/testing';
import { createPvs } from '@palmid/server/modules/pvs/service';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cli, lastJson } from '../e2e/harness.ts';
import { type Cluster, clusterUnavailable, startCluster } from '../scale/cluster.ts';
import { describeNeeding } from '../support/requirements.ts';
import { openKiosk, Recorder } from './sockets.ts';

/**
 * Revocation on every instance (docs/security.md): two server instances on one store (PostgreSQL when
 * installed) and one Redis; the admin CLI, a third process, revokes. Every socket that used the
 * credential closes with 1008 `revoked`, whichever instance holds it.
 */
describeNeeding(clusterUnavailable())('revocation across two instances', () => {
  let c: Cluster;
  const admin = async <T>(...args: string[]): Promise<T> => {
    const r = await cli('server/src/cli/admin.ts', [...args, '--json'], c.env);
    expect(r.code, r.stderr).toBe(0);
    return lastJson<T>(r.stdout);
  };

  beforeAll(async () => {
    c = await startCluster(2);
  }, 90_000);
  afterAll(() => c?.stop());

  it('admin pvs revoke closes the kiosk’s sockets on both instances', async () => {
    const db = c.instances[0]!.ctx.database.db;
    const kiosk = await createPvs(db, { name: 'Roaming till' });
    const onA = await openKiosk(c.bases[0]!, kiosk);
    const onB = await openKiosk(c.bases[1]!, kiosk);
    await admin('pvs', 'revoke', kiosk.pvs_id);
    for (const s of [onA, onB])
      expect(await s.whenClosed(5000)).toMatchObject({ code: 1008, reason: 'revoked' });
  }, 60_000);

  it('admin vendor rotate-key closes the old key’s sockets on both instances; the new key is served', async () => {
    const vendor = await seedVendor(c.instances[1]!.ctx, 'Cluster Shop');
    const onA = await Recorder.open(`${c.bases[0]}/ws/vendor`, { 'x-api-key': vendor.api_key });
    const onB = await Recorder.open(`${c.bases[1]}/ws/vendor`, {});
    expect((await onB.call('a', 'auth', { api_key: vendor.api_key })).result).toBeDefined();
    const rotated = await admin<{ api_key: string }>('vendor', 'rotate-key', vendor.vendor_id);
    for (const s of [onA, onB])
      expect(await s.whenClosed(5000)).toMatchObject({ code: 1008, reason: 'revoked' });
    const fresh = await Recorder.open(`${c.bases[1]}/ws/vendor`, { 'x-api-key': rotated.api_key });
    expect((await fresh.call('p', 'ping', {})).result).toMatchObject({ pong: true });
    fresh.ws.close();
  }, 60_000);
});
