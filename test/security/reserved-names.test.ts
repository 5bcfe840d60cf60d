import { attestPalms, type TestDevice } from '@palmid/server/dev/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, bindDevice, cli, lastJson, type ServerProc, startServer, tempDir } from '../e2e/harness.ts';
import { randomTemplate } from '../support/templates.ts';

/**
 * Attack: a user forges a service-computed name (`age_over_21: true` while born in 2012) and a vendor
 * asking for that name receives the forgery (docs/attributes.md, "Reserved names"). Against a real
 * server process.
 */
describe('reserved service-derived names (real server process)', () => {
  const tmp = tempDir('palmid-reserved-');
  const env = { DATABASE_URL: `sqlite:${tmp.dir}/p.db`, PALMID_KEY_FILE: `${tmp.dir}/k` };
  const admin = (...args: string[]) => cli('server/src/cli/admin.ts', args, env);
  const template = randomTemplate();
  let server: ServerProc;
  let vendor: { vendor_id: string; api_key: string };
  let user: { user_id: string; user_token: string };
  /** the bar's capture host: palms are believed only when attested (docs/vendor-api.md) */
  let host: TestDevice;

  beforeAll(async () => {
    vendor = lastJson((await admin('--json', 'vendor', 'create', '--name', 'Bar')).stdout);
    server = await startServer({ ...env, PORT: '0', PALMID_ENV: 'sandbox' });
    host = await bindDevice(
      server.base,
      lastJson<{ pvs_id: string; device_token: string; provisioning_secret: string }>(
        (await admin('--json', 'pvs', 'create', '--name', 'bar host', '--vendor', vendor.vendor_id)).stdout,
      ),
    );
    const created = await api<{ data: { user_id: string; user_token: string } }>(
      server.base,
      'POST',
      '/api/v1/mpc/users/create',
      {
        key: vendor.api_key,
        body: { attributes: {}, palms: attestPalms(host, [{ hand: 'right' as const, template }]) },
      },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    user = created.body.data;
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    tmp.remove();
  });

  const put = (name: string, value: unknown) =>
    api<{ error?: { details?: { reason?: string } } }>(server.base, 'PUT', `/v1/attributes/${name}`, {
      token: user.user_token,
      body: { value },
    });

  it('refuses every reserved name to the user with 403 reserved_name', async () => {
    expect((await put('date_of_birth', '2012-03-04')).status).toBe(200);
    for (const [name, value] of [
      ['age_over_21', true],
      ['age_over_18', true],
      ['pseudonym', 'x'],
      ['payment', 1],
      ['ledger_id', 'x'],
      ['age_proof', 'x'],
      ['country_in_set', true],
      ['is_adult', true],
      ['is_vip', true],
      ['user_id', 'x'],
      ['identity_verified', true],
      ['email_verified', true],
    ] as const) {
      const res = await put(name, value);
      expect(res.status, name).toBe(403);
      expect(res.body.error?.details?.reason, name).toBe('reserved_name');
    }
    // an ordinary name is still the user's
    expect((await put('shoe_size', 42)).status).toBe(200);
  });

  it('refuses reserved names to a vendor writing for its user', async () => {
    const res = await api<{ error?: { details?: { reason?: string } } }>(
      server.base,
      'POST',
      '/api/v1/mpc/users/update',
      { key: vendor.api_key, body: { user_id: user.user_id, attributes: { age_over_21: true } } },
    );
    expect(res.status).toBe(403);
    expect(res.body.error?.details?.reason).toBe('reserved_name');
  });

  it('never discloses a forged age_over_21 to a payment asking for it', async () => {
    const consent = await api(server.base, 'POST', '/v1/consents', {
      token: user.user_token,
      body: {
        vendor_id: vendor.vendor_id,
        attributes: [{ name: 'age_over_21', purpose: 'age check', retention_days: 0 }],
      },
    });
    expect(consent.status, JSON.stringify(consent.body)).toBe(201);
    const pay = (auth_context: Record<string, unknown>) =>
      api<{
        data: { status: string; auth_result: { attributes: Record<string, unknown>; reason?: string } };
      }>(server.base, 'POST', '/api/v1/auth', {
        key: vendor.api_key,
        body: { auth_context, palm: host.direct({ template, hand: 'right', liveness: 0.99 }) },
      });
    // asked by name outside an entrance with minimum_age 21, the name is refused before anything is read
    // (issue 27: a name the service derives is not a valid custom name), so nothing forged can come back
    const asked = await pay({ type: 'payment', amount: 900, attributes_required: ['age_over_21'] });
    expect(asked.status, JSON.stringify(asked.body)).toBe(400);
    expect(JSON.stringify(asked.body)).toContain("'age_over_21' is neither in the attribute catalogue");
    expect(JSON.stringify(asked.body)).not.toContain('"age_over_21":true');
    // computed by the service from the birth date: false
    const computed = await pay({ type: 'entrance', minimum_age: 21 });
    expect(computed.status, JSON.stringify(computed.body)).toBe(200);
    expect(computed.body.data.auth_result.attributes.age_over_21).toBe(false);
    expect(computed.body.data.auth_result.reason).toBe('underage');
  });
});
