import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, cli, lastJson, run, startServer, tempDir } from './harness.ts';

/**
 * Two servers on two databases, started from one directory with PALMID_MASTER_KEY set (docs/reliability.md
 * "Audit anchor"): each keeps its anchor beside its own database, `admin audit verify` passes on both, and
 * one database's anchor checked against the other says so instead of crying tampering.
 */
describe('audit anchor beside its database', () => {
  const a = tempDir('palmid-anchor-a-');
  const b = tempDir('palmid-anchor-b-');
  const key = 'ab'.repeat(32);
  const envOf = (dir: string) => ({
    DATABASE_URL: `sqlite:${dir}/palmid.db`,
    PALMID_MASTER_KEY: key,
    PALMID_ENV: 'sandbox',
  });
  afterAll(() => {
    a.remove();
    b.remove();
  });

  const seed = async (dir: string) => {
    const env = envOf(dir);
    const server = await startServer({ ...env, PORT: '0' });
    try {
      const vendor = lastJson<{ api_key: string }>(
        await run('server/src/cli/admin.ts', ['--json', 'vendor', 'create', '--name', 'Shop'], env),
      );
      const created = await api(server.base, 'POST', '/api/v1/mpc/users/create', {
        key: vendor.api_key,
        body: { attributes: { email: `someone@${dir.length}.example` } },
      });
      expect(created.status).toBe(201);
    } finally {
      await server.stop(); // the anchor is brought up to date on shutdown
    }
  };

  it('each server anchors beside its own database; a crossed anchor is named as another database’s', async () => {
    await Promise.all([seed(a.dir), seed(b.dir)]);
    const anchorA = join(a.dir, 'palmid.audit-anchor.json');
    const anchorB = join(b.dir, 'palmid.audit-anchor.json');
    expect(existsSync(anchorA)).toBe(true);
    expect(existsSync(anchorB)).toBe(true);
    const parsedA = JSON.parse(readFileSync(anchorA, 'utf8')) as { seq: number; db: string };
    const parsedB = JSON.parse(readFileSync(anchorB, 'utf8')) as { seq: number; db: string };
    expect(parsedA.seq).toBeGreaterThan(0);
    expect(parsedA.db).not.toBe(parsedB.db);

    const verifyA = await cli('server/src/cli/admin.ts', ['audit', 'verify'], envOf(a.dir));
    expect(verifyA.code, verifyA.stderr).toBe(0);
    expect(verifyA.stdout).toMatch(/audit log intact: \d+ record\(s\); extends the anchor of/);
    const verifyB = await cli('server/src/cli/admin.ts', ['audit', 'verify'], envOf(b.dir));
    expect(verifyB.code, verifyB.stderr).toBe(0);

    const crossed = await cli(
      'server/src/cli/admin.ts',
      ['audit', 'verify', '--anchor', anchorB],
      envOf(a.dir),
    );
    expect(crossed.code).toBe(1);
    expect(crossed.stdout).toContain('this anchor belongs to another database');
    expect(crossed.stdout).toMatch(/The chain itself is intact/);
    expect(crossed.stdout).not.toMatch(/TAMPERED/);
  }, 120_000);
});
