import { attestPalms, type TestDevice } from '@palmid/server/dev/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, bindDevice, cli, lastJson, type ServerProc, startServer, tempDir } from '../e2e/harness.ts';
import { randomTemplate } from '../support/templates.ts';

/**
 * Attack: two vendors link one user by the ledger id they both receive (docs/vendor-api.md, "Ledger").
 * Against a real server process: the same palm authenticated at two vendors yields two different ledger
 * ids, each vendor's ledger route answers for its own id only.
 */
describe('per-vendor ledger ids (real server process)', () => {
  const tmp = tempDir('palmid-ledger-');
  const env = { DATABASE_URL: `sqlite:${tmp.dir}/p.db`, PALMID_KEY_FILE: `${tmp.dir}/k` };
  const admin = (...args: string[]) => cli('server/src/cli/admin.ts', args, env);
  const template = randomTemplate();
  let server: ServerProc;
  let a: { vendor_id: string; api_key: string };
  let b: { vendor_id: string; api_key: string };
  /** each vendor's capture host: palms are believed only when attested (docs/vendor-api.md) */
  const hosts = new Map<string, TestDevice>();

  beforeAll(async () => {
    a = lastJson((await admin('--json', 'vendor', 'create', '--name', 'Shop A')).stdout);
    b = lastJson((await admin('--json', 'vendor', 'create', '--name', 'Shop B')).stdout);
    server = await startServer({ ...env, PORT: '0', PALMID_ENV: 'sandbox' });
    for (const v of [a, b]) {
      const host = lastJson<{ pvs_id: string; device_token: string; provisioning_secret: string }>(
        (await admin('--json', 'pvs', 'create', '--name', 'host', '--vendor', v.vendor_id)).stdout,
      );
      hosts.set(v.api_key, await bindDevice(server.base, host));
    }
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    tmp.remove();
  });

  const pay = async (key: string) => {
    const res = await api<{ data: { status: string; auth_result: { ledger_id: string; user_id: string } } }>(
      server.base,
      'POST',
      '/api/v1/auth',
      {
        key,
        body: {
          auth_context: { type: 'payment', amount: 250 },
          palm: hosts.get(key)!.direct({ template, hand: 'right', liveness: 0.99 }),
        },
      },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.status).toBe('completed');
    return res.body.data.auth_result;
  };
  const ledger = (key: string, id: string) =>
    api<{ transactions: string[] }>(
      server.base,
      'GET',
      `/api/v1/ledger/transactions/${id}?from=${Math.floor(Date.now() / 1000) - 600}`,
      { key },
    );

  it('gives two vendors different ledger ids for one user, each usable only by its own vendor', async () => {
    const created = await api<{ data: { user_id: string; ledger_id: string } }>(
      server.base,
      'POST',
      '/api/v1/mpc/users/create',
      {
        key: a.api_key,
        body: {
          attributes: {},
          palms: attestPalms(hosts.get(a.api_key)!, [{ hand: 'right' as const, template }]),
        },
      },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const atA = await pay(a.api_key);
    const atB = await pay(b.api_key);
    expect(atA.ledger_id).toMatch(/^[0-9a-f]{64}$/);
    expect(atB.ledger_id).toMatch(/^[0-9a-f]{64}$/);
    expect(atA.ledger_id).not.toBe(atB.ledger_id);
    expect(atA.user_id).not.toBe(atB.user_id);
    // the id vendor A got at creation is the one its payments are filed under
    expect(created.body.data.ledger_id).toBe(atA.ledger_id);

    const ownA = await ledger(a.api_key, atA.ledger_id);
    expect(ownA.status).toBe(200);
    expect(ownA.body.transactions).toHaveLength(1);
    const txA = JSON.parse(Buffer.from(ownA.body.transactions[0]!, 'hex').toString('utf8'));
    expect(txA['user-id']).toBe(atA.ledger_id);
    const ownB = await ledger(b.api_key, atB.ledger_id);
    expect(ownB.status).toBe(200);
    expect(ownB.body.transactions).toHaveLength(1);
    expect(ownB.body.transactions[0]).not.toContain(Buffer.from(atA.ledger_id).toString('hex'));

    // B holding A's id learns nothing, and neither does A with B's
    expect((await ledger(b.api_key, atA.ledger_id)).status).toBe(404);
    expect((await ledger(a.api_key, atB.ledger_id)).status).toBe(404);

    const read = await api<{ data: { ledger_id: string } }>(server.base, 'POST', '/api/v1/mpc/users/read', {
      key: a.api_key,
      body: { user_id: created.body.data.user_id },
    });
    expect(read.status).toBe(200);
    expect(read.body.data.ledger_id).toBe(atA.ledger_id);
  }, 120_000);
});
