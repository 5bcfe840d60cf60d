import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, cli, lastJson, type ServerProc, startServer, tempDir } from '../e2e/harness.ts';
import { openKiosk, Recorder } from './sockets.ts';

/**
 * Revocation is immediate (docs/security.md): `admin pvs revoke` and `admin vendor rotate-key|revoke-key`,
 * run as their own processes on the server's database, close every open socket that used the credential
 * (1008 `revoked`), and nothing is delivered on it after the revocation — even before the server's next
 * poll (the poll interval is set to its 1 s maximum here, so only the check before delivery can stop it).
 */
const ADMIN = 'server/src/cli/admin.ts';

describe('revocation closes live sockets (one server process, SQLite, admin CLI as a process)', () => {
  const tmp = tempDir('palmid-revoke-');
  let server: ServerProc;
  let wsBase: string;
  let env: Record<string, string>;
  const admin = async <T>(...args: string[]): Promise<T> => {
    const r = await cli(ADMIN, [...args, '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    return lastJson<T>(r.stdout);
  };

  /** A login context created and cancelled: the cancel is an `auth.updated` for the vendor's sockets. */
  const loginCancelled = async (key: string) => {
    const created = await api(server.base, 'POST', '/api/v1/auth/create', {
      key,
      body: { auth_context: { type: 'login' } },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.auth_id as string;
    expect((await api(server.base, 'POST', `/api/v1/auth/${id}/cancel`, { key })).status).toBe(200);
    return created;
  };

  beforeAll(async () => {
    env = {
      DATABASE_URL: `sqlite:${join(tmp.dir, 'palmid.db')}`,
      PALMID_MASTER_KEY: randomBytes(32).toString('hex'),
      PALMID_ENV: 'sandbox',
      PALMID_REVOCATION_POLL_MS: '1000',
    };
    server = await startServer({ ...env, PORT: '0' });
    wsBase = server.base.replace(/^http/, 'ws');
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    tmp.remove();
  });

  it('admin pvs revoke: the kiosk socket gets no scan.request after the revocation and closes 1008 revoked', async () => {
    const vendor = await admin<{ vendor_id: string; api_key: string }>('vendor', 'create', '--name', 'Shop');
    const kiosk = await admin<{ pvs_id: string; device_token: string }>(
      'pvs',
      'create',
      '--name',
      'Till',
      '--vendor',
      vendor.vendor_id,
    );
    const k = await openKiosk(wsBase, kiosk);
    const before = await api(server.base, 'POST', '/api/v1/auth/create', {
      key: vendor.api_key,
      body: { auth_context: { type: 'payment', amount: 100 } },
    });
    expect(before.status).toBe(201);
    await k.frame((f) => f.method === 'scan.request' && f.params?.auth_id === before.body.data.auth_id);

    await admin('pvs', 'revoke', kiosk.pvs_id);
    // Created right after the revocation, before the server's next poll: must not reach the revoked kiosk.
    const after = await api(server.base, 'POST', '/api/v1/auth/create', {
      key: vendor.api_key,
      body: { auth_context: { type: 'payment', amount: 200 } },
    });
    expect(after.status).toBe(201);
    const closed = await k.whenClosed(5000);
    expect(closed).toMatchObject({ code: 1008, reason: 'revoked' });
    expect(k.frames.some((f) => f.params?.auth_id === after.body.data.auth_id)).toBe(false);
    // the revoked token cannot come back
    const again = await Recorder.open(`${wsBase}/ws/pvs`, { authorization: `Bearer ${kiosk.device_token}` });
    expect(await again.whenClosed()).toMatchObject({ code: 1008, reason: 'unauthorized' });
  }, 60_000);

  it('admin vendor rotate-key: sockets opened with the old key get nothing more and close; the new key is served', async () => {
    const vendor = await admin<{ vendor_id: string; api_key: string }>(
      'vendor',
      'create',
      '--name',
      'Rotating',
    );
    const viaHeader = await Recorder.open(`${wsBase}/ws/vendor`, { 'x-api-key': vendor.api_key });
    const viaFrame = await Recorder.open(`${wsBase}/ws/vendor`, {});
    expect((await viaFrame.call('a1', 'auth', { api_key: vendor.api_key })).result).toBeDefined();
    const first = await loginCancelled(vendor.api_key);
    for (const s of [viaHeader, viaFrame])
      await s.frame((f) => f.method === 'auth.updated' && f.params?.auth_id === first.body.data.auth_id);

    const rotated = await admin<{ api_key: string }>('vendor', 'rotate-key', vendor.vendor_id);
    const fresh = await Recorder.open(`${wsBase}/ws/vendor`, { 'x-api-key': rotated.api_key });
    const second = await loginCancelled(rotated.api_key);
    await fresh.frame((f) => f.method === 'auth.updated' && f.params?.auth_id === second.body.data.auth_id);
    for (const s of [viaHeader, viaFrame]) {
      expect(await s.whenClosed(5000)).toMatchObject({ code: 1008, reason: 'revoked' });
      expect(s.frames.some((f) => f.params?.auth_id === second.body.data.auth_id)).toBe(false);
    }
    expect(fresh.closed).toBeUndefined();

    await admin('vendor', 'revoke-key', vendor.vendor_id);
    expect(await fresh.whenClosed(5000)).toMatchObject({ code: 1008, reason: 'revoked' });
  }, 60_000);

  it('an idle socket closes at the next poll, without any delivery to trigger the check', async () => {
    const vendor = await admin<{ vendor_id: string; api_key: string }>('vendor', 'create', '--name', 'Idle');
    const kiosk = await admin<{ pvs_id: string; device_token: string }>('pvs', 'create', '--name', 'Idle');
    const k = await openKiosk(wsBase, kiosk);
    const v = await Recorder.open(`${wsBase}/ws/vendor`, { 'x-api-key': vendor.api_key });
    await admin('pvs', 'revoke', kiosk.pvs_id);
    await admin('vendor', 'revoke-key', vendor.vendor_id);
    expect(await k.whenClosed(5000)).toMatchObject({ code: 1008, reason: 'revoked' });
    expect(await v.whenClosed(5000)).toMatchObject({ code: 1008, reason: 'revoked' });
  }, 60_000);
});
