import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cli, lastJson, startServer, tempDir } from './harness.ts';

describe('npm run admin (operator CLI on the server database)', () => {
  const tmp = tempDir('palmid-admin-');
  const env = { DATABASE_URL: `sqlite:${tmp.dir}/p.db`, PALMID_KEY_FILE: `${tmp.dir}/k` };
  const admin = (...args: string[]) => cli('server/src/cli/admin.ts', args, env);
  afterAll(() => tmp.remove());

  it('has --help on every command and refuses bad usage with exit 2 and no stack trace', async () => {
    const helps = [
      ['--help'],
      ['vendor', '--help'],
      ['vendor', 'create', '--help'],
      ['pvs', 'create', '--help'],
      ['user', 'token', '--help'],
      ['audit', 'verify', '--help'],
    ];
    const results = await Promise.all(helps.map((args) => admin(...args)));
    results.forEach((r, n) => {
      expect(r.code, helps[n]!.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/Usage:/);
    });
    const missing = await admin('vendor', 'create');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/--name/);
    const badScope = await admin('vendor', 'create', '--name', 'X', '--scopes', 'auth,root');
    expect(badScope.code).toBe(2);
    expect(badScope.stderr).toMatch(/unknown scope 'root'/);
    expect(badScope.stderr).not.toMatch(/\n\s+at /);
    const unknownUser = await admin('user', 'token', '00000000-0000-4000-8000-000000000000');
    expect(unknownUser.code).toBe(2);
    expect(unknownUser.stderr).toMatch(/not found/i);
  }, 120_000);

  it('vendor keys: create, rotate (old key stops), revoke; kiosks; user tokens — against a running server', async () => {
    const created = lastJson<{ vendor_id: string; api_key: string; scopes: string[] }>(
      (await admin('--json', 'vendor', 'create', '--name', 'Shop', '--scopes', 'auth')).stdout,
    );
    expect(created.api_key).toMatch(/^sk_test_[A-Za-z0-9_-]{43}$/);
    expect(created.scopes).toEqual(['auth']);
    const server = await startServer({ ...env, PORT: '0', PALMID_ENV: 'sandbox' });
    try {
      expect((await api(server.base, 'GET', '/api/v1/status', { key: created.api_key })).status).toBe(200);
      const rotated = lastJson<{ api_key: string; revoked: number }>(
        (await admin('--json', 'vendor', 'rotate-key', created.vendor_id)).stdout,
      );
      expect(rotated.revoked).toBe(1);
      expect((await api(server.base, 'GET', '/api/v1/status', { key: created.api_key })).status).toBe(401);
      expect((await api(server.base, 'GET', '/api/v1/status', { key: rotated.api_key })).status).toBe(200);
      expect(
        lastJson<{ revoked: number }>(
          (await admin('--json', 'vendor', 'revoke-key', created.vendor_id)).stdout,
        ).revoked,
      ).toBe(1);
      expect((await api(server.base, 'GET', '/api/v1/status', { key: rotated.api_key })).status).toBe(401);

      const list = lastJson<{ vendor_id: string }[]>((await admin('--json', 'vendor', 'list')).stdout);
      expect(list.map((v) => v.vendor_id)).toContain(created.vendor_id);
      const kiosk = lastJson<{ pvs_id: string; device_token: string }>(
        (await admin('--json', 'pvs', 'create', '--name', 'till', '--vendor', created.vendor_id)).stdout,
      );
      expect(kiosk.device_token).toMatch(/^pvs_/);
      expect(
        (await admin('pvs', 'create', '--name', 'x', '--vendor', '00000000-0000-4000-8000-000000000000'))
          .code,
      ).toBe(2);
      expect(
        lastJson<{ pvs_id: string }[]>((await admin('--json', 'pvs', 'list')).stdout).map((p) => p.pvs_id),
      ).toContain(kiosk.pvs_id);

      const users = lastJson<{ vendor_id: string; api_key: string }>(
        (await admin('--json', 'vendor', 'create', '--name', 'Users')).stdout,
      );
      const u = await api(server.base, 'POST', '/api/v1/mpc/users/create', { key: users.api_key, body: {} });
      // operators work with the internal id (the user's own, from the user API), never a vendor's id
      const userId = (
        await api<{ data: { value: string } }>(server.base, 'GET', '/v1/attributes/user_id', {
          token: u.body.data.user_token as string,
        })
      ).body.data.value;
      // a vendor's id for the user names no user here (exit 2, like any unknown id)
      expect((await admin('--json', 'user', 'token', u.body.data.user_id as string)).code).toBe(2);
      const token = lastJson<{ user_token: string; expires_at: string }>(
        (await admin('--json', 'user', 'token', userId)).stdout,
      );
      expect(Date.parse(token.expires_at) - Date.now()).toBeGreaterThan(29 * 86_400_000);
      expect((await api(server.base, 'GET', '/v1/consents', { token: token.user_token })).status).toBe(200);
    } finally {
      await server.stop();
    }
  }, 120_000);

  it('audit verify passes on an intact log and exits 1 naming the row when a row is edited', async () => {
    const server = await startServer({ ...env, PORT: '0', PALMID_ENV: 'sandbox' });
    try {
      const v = lastJson<{ api_key: string }>(
        (await admin('--json', 'vendor', 'create', '--name', 'Audit')).stdout,
      );
      const u = await api(server.base, 'POST', '/api/v1/mpc/users/create', {
        key: v.api_key,
        body: { attributes: { email: 'a@example.com', phone: '+4915112345678' } },
      });
      expect(u.status).toBe(201);
    } finally {
      await server.stop();
    }
    const ok = await admin('--json', 'audit', 'verify');
    expect(ok.code).toBe(0);
    // this user's two attribute writes, and the first test's user reading its own user_id
    expect(lastJson<{ ok: boolean; rows: number }>(ok.stdout)).toMatchObject({ ok: true, rows: 3 });
    const db = new Database(`${tmp.dir}/p.db`);
    db.prepare("UPDATE audit SET attribute_name = 'name' WHERE seq = 1").run();
    db.close();
    const bad = await admin('audit', 'verify');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/TAMPERED[\s\S]*seq 1/);
  }, 120_000);
});

describe('audit anchor (whole-log rollback)', () => {
  const tmp = tempDir('palmid-anchor-');
  const env = { DATABASE_URL: `sqlite:${tmp.dir}/p.db`, PALMID_KEY_FILE: `${tmp.dir}/k` };
  const admin = (...args: string[]) => cli('server/src/cli/admin.ts', args, env);
  afterAll(() => tmp.remove());

  it('the server anchors the chain head on shutdown; wiping the log then fails audit verify', async () => {
    const server = await startServer({ ...env, PORT: '0', PALMID_ENV: 'sandbox' });
    try {
      const v = lastJson<{ api_key: string }>(
        (await admin('--json', 'vendor', 'create', '--name', 'Anchor')).stdout,
      );
      const u = await api(server.base, 'POST', '/api/v1/mpc/users/create', {
        key: v.api_key,
        body: { attributes: { email: 'a@example.com' } },
      });
      expect(u.status).toBe(201);
    } finally {
      await server.stop();
    }
    const ok = await admin('audit', 'verify');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/intact: 1 record\(s\); extends the anchor of .* \(seq 1\)/);
    const printed = JSON.parse((await admin('audit', 'anchor')).stdout) as { seq: number };
    expect(printed.seq).toBe(1);

    // wipe every row and reset the head to the unsigned genesis the migration seeds
    const db = new Database(`${tmp.dir}/p.db`);
    db.prepare('DELETE FROM audit').run();
    db.prepare(`UPDATE audit_head SET seq = 0, hash = '${'0'.repeat(64)}', mac = ''`).run();
    db.close();
    const bad = await admin('audit', 'verify');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/TAMPERED[\s\S]*seq 1: .*rolled back or wiped/);
    const missing = await admin('audit', 'verify', '--anchor', `${tmp.dir}/nope.json`);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/nope\.json: no such anchor file/);
    expect(missing.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);
});

describe('server configuration', () => {
  it('a bad value stops start-up with one line naming the key', async () => {
    const r = await cli('server/src/main.ts', [], { PORT: 'eighty', PALMID_SIM: '0' });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/PORT/);
    const db = await cli('server/src/main.ts', [], { DATABASE_URL: 'mysql://x', PALMID_SIM: '0' });
    expect(db.code).toBe(2);
    expect(db.stderr).toMatch(/DATABASE_URL/);
  }, 60_000);
});
