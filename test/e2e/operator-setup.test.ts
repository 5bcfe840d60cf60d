import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { postgresUnavailable, startPostgres, type TestPostgres } from '../support/postgres.ts';
import { describeNeeding } from '../support/requirements.ts';
import { api, cli, lastJson, startServer, tempDir } from './harness.ts';

/**
 * An operator's first hour on PostgreSQL, the way docs/deployment.md says it: the documented role and
 * database (a role that owns its database, no superuser), then `admin vendor create` in production
 * issues the key a production server accepts.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const deployment = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8');
// without PostgreSQL: skipped on a developer's machine, a failure under CI=true (test/support/requirements.ts)
describeNeeding(postgresUnavailable())('operator set-up on PostgreSQL (docs/deployment.md)', () => {
  const tmp = tempDir('palmid-operator-');
  let pg: TestPostgres;
  let url = '';

  beforeAll(async () => {
    pg = await startPostgres();
    // the documented SQL, run as the cluster's superuser (named palmid in the scratch cluster, so the
    // documented role is renamed palmid_app here)
    const sql = /sudo -u postgres psql <<'SQL'\n([\s\S]*?)\nSQL/
      .exec(deployment)![1]!
      .replace(/\bpalmid\b/g, 'palmid_app');
    const pgmod = (await import('pg')).default;
    const client = new pgmod.Client({ connectionString: pg.url });
    await client.connect();
    try {
      for (const statement of sql
        .split(';')
        .map((x) => x.trim())
        .filter(Boolean))
        await client.query(statement);
      const role = await client.query("select rolsuper from pg_roles where rolname = 'palmid_app'");
      expect(role.rows[0].rolsuper).toBe(false);
    } finally {
      await client.end();
    }
    url = `postgres://palmid_app:change-me@127.0.0.1:${pg.port}/palmid_app?sslmode=disable`;
  }, 60_000);

  afterAll(async () => {
    await pg?.stop();
    tmp.remove();
  });

  it('admin vendor create in production issues a live key, which the production server accepts', async () => {
    const env = { DATABASE_URL: url, PALMID_KEY_FILE: `${tmp.dir}/master.key`, PALMID_ENV: 'production' };
    const created = await cli(
      'server/src/cli/admin.ts',
      ['--json', 'vendor', 'create', '--name', 'Prod Shop'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const vendor = lastJson<{ api_key: string; mode: string }>(created.stdout);
    expect(vendor.mode).toBe('live');
    expect(vendor.api_key).toMatch(/^sk_live_/);
    expect(created.stderr).not.toMatch(/note:/);

    const server = await startServer({
      ...env,
      PORT: '0',
      PALMID_AUDIT_ANCHOR: `${tmp.dir}/audit-anchor.json`,
    });
    try {
      expect((await api(server.base, 'GET', '/api/v1/status', { key: vendor.api_key })).status).toBe(200);
    } finally {
      await server.stop();
    }

    // asked for explicitly, the other mode is issued with a note saying this server will refuse it
    const test = await cli(
      'server/src/cli/admin.ts',
      ['--json', 'vendor', 'create', '--name', 'Staging Shop', '--mode', 'test'],
      env,
    );
    expect(lastJson<{ api_key: string }>(test.stdout).api_key).toMatch(/^sk_test_/);
    expect(test.stderr).toMatch(/note: a test key is refused by this production server/);
  }, 120_000);

  it('outside production the default is a test key', async () => {
    const env = { DATABASE_URL: url, PALMID_KEY_FILE: `${tmp.dir}/master.key`, PALMID_ENV: 'sandbox' };
    const created = await cli(
      'server/src/cli/admin.ts',
      ['--json', 'vendor', 'create', '--name', 'Dev Shop'],
      env,
    );
    expect(lastJson<{ api_key: string }>(created.stdout).api_key).toMatch(/^sk_test_/);
    expect(created.stderr).not.toMatch(/note:/);
  }, 60_000);
});
