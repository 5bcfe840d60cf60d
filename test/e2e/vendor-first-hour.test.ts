import { afterAll, describe, expect, it, vi } from 'vitest';
import { api, cli, type ServerProc, sqliteServerEnv, start, startServer, tempDir } from './harness.ts';

/**
 * What a new vendor developer meets in the first hour (docs/quickstart.md), through the real processes:
 * `npm start`'s banner and log, the REST API and its OpenAPI, the shipped `/ws/vendor` watcher and the
 * admin CLI.
 */
describe('vendor developer, first hour', () => {
  const tmp = tempDir('palmid-vendor-hour-');
  const env = sqliteServerEnv(tmp.dir, { PALMID_ENV: 'development' });
  let server: ServerProc | undefined;
  afterAll(async () => {
    await server?.stop();
    tmp.remove();
  });

  const boot = async (extra: Record<string, string> = {}) => {
    const s = await startServer({ ...env, ...extra });
    const key = (await s.waitFor(/vendor key:\s+(sk_test_\S+)/, 60_000))[1]!;
    const note = (await s.waitFor(/^\s+(\^ [A-Z]+:.*|\(.*\))$/))[1]!;
    const vendorId = (await s.waitFor(/demo vendor:\s+(\S+)/))[1]!;
    return { s, key, note, vendorId };
  };

  it('the demo key survives a restart; a rotation is undone loudly; dev logs are readable lines', async () => {
    const first = await boot();
    expect(first.note).toMatch(/new demo vendor/);
    const listening = first.s.output.find((l) => l.includes('palmid listening on'))!;
    expect(listening).toMatch(/INFO/);
    expect(listening).toMatch(/palm match threshold 0\.325\b/);
    expect(listening.trim().startsWith('{')).toBe(false);
    await first.s.stop();

    const second = await boot();
    expect(second.key).toBe(first.key);
    expect(second.note).toMatch(/same key as on earlier starts/);
    expect((await api(second.s.base, 'GET', '/api/v1/status', { key: first.key })).status).toBe(200);
    await second.s.stop();

    const admin = (...args: string[]) => cli('server/src/cli/admin.ts', args, env);
    const rotated = await admin('vendor', 'rotate-key', first.vendorId);
    expect(rotated.code).toBe(0);
    const third = await boot({ PALMID_LOG_FORMAT: 'json' });
    expect(third.key).toBe(first.key);
    expect(third.note).toMatch(/RESTORED/);
    const jsonLine = third.s.output.find((l) => l.includes('palmid listening on'))!;
    expect(JSON.parse(jsonLine)).toMatchObject({ msg: expect.stringContaining('palmid listening on') });
    const rotatedKey = /api key: (\S+)/.exec(rotated.stdout)![1]!;
    expect((await api(third.s.base, 'GET', '/api/v1/status', { key: rotatedKey })).status).toBe(401);
    server = third.s;
  }, 240_000);

  it('a ledger read with the wrong id says to pass auth_result.ledger_id (reply and OpenAPI)', async () => {
    const key = (await server!.waitFor(/vendor key:\s+(sk_test_\S+)/))[1]!;
    const res = await api<{ error: { details: Record<string, string> } }>(
      server!.base,
      'GET',
      `/api/v1/ledger/transactions/${'ab'.repeat(32)}?from=${Math.floor(Date.now() / 1000) - 3600}`,
      { key },
    );
    expect(res.status).toBe(404);
    expect(res.body.error.details.hint).toMatch(/auth_result\.ledger_id, not auth_result\.user_id/);

    const doc = (await (await fetch(`${server!.base}/docs/json`)).json()) as {
      paths: Record<string, Record<string, { description?: string; responses: Record<string, unknown> }>>;
    };
    const ledger = doc.paths['/api/v1/ledger/transactions/{ledger_id}']!.get!;
    expect(ledger.description).toMatch(/auth_result\.ledger_id/);
    expect(JSON.stringify(ledger.responses['404'])).toMatch(/not auth_result\.user_id/);
    for (const [path, method, statuses] of [
      ['/api/v1/auth/create', 'post', ['201', '400', '401', '403', '404', '429']],
      ['/api/v1/auth/{auth_id}/status', 'get', ['200', '400', '401', '403', '404', '429']],
      ['/api/v1/auth/{auth_id}/cancel', 'post', ['200', '400', '401', '403', '404', '429']],
      ['/api/v1/status', 'get', ['200', '401', '403', '429']],
      ['/api/v1/mpc/users/create', 'post', ['201', '400', '401', '403', '429']],
    ] as const) {
      const op = doc.paths[path]![method]!;
      expect(Object.keys(op.responses).sort(), path).toEqual([...statuses].sort());
      const limited = JSON.stringify(op.responses['401']);
      expect(limited, path).toMatch(/X-API-Key/); // the description
      expect(limited, path).toMatch(/"UNAUTHORIZED"/); // the example body
    }
  });

  it('npm run vendor -- watch prints every change of your contexts; wrong key exit 1, no key exit 2', async () => {
    const key = (await server!.waitFor(/vendor key:\s+(sk_test_\S+)/))[1]!;
    const help = await cli('server/src/cli/vendor.ts', ['watch', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/PALMID_API_KEY/);
    const noKey = await cli('server/src/cli/vendor.ts', ['watch', '--url', server!.base], {
      PALMID_API_KEY: '',
    });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/an API key is needed/);
    const badUrl = await cli('server/src/cli/vendor.ts', ['watch', '--url', 'notaurl', '--key', key]);
    expect(badUrl.code).toBe(2);
    const wrong = await cli('server/src/cli/vendor.ts', ['watch', '--url', server!.base], {
      PALMID_API_KEY: `sk_test_${'A'.repeat(43)}`,
    });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/refused the API key/);
    expect(`${wrong.stdout}${wrong.stderr}`).not.toMatch(/\n\s+at /);

    const created = await api(server!.base, 'POST', '/api/v1/auth/create', {
      key,
      body: { auth_context: { type: 'payment', amount: 1250 } },
    });
    expect(created.status).toBe(201);
    const authId = created.body.data.auth_id as string;
    const watcher = start('server/src/cli/vendor.ts', ['watch', '--url', server!.base, '--until', authId], {
      PALMID_API_KEY: key,
    });
    await watcher.waitFor(/watching ws:/);
    expect((await api(server!.base, 'POST', `/api/v1/auth/${authId}/cancel`, { key })).status).toBe(200);
    await watcher.waitFor(new RegExp(`${authId}\\s+cancelled`));
    await vi.waitFor(() => expect(watcher.child.exitCode).toBe(0), { timeout: 10_000 });
  }, 120_000);

  it('admin vendor create refuses a URL that is not one (exit 2, a clear line); admin follows the exit-code table', async () => {
    const res = await cli(
      'server/src/cli/admin.ts',
      ['vendor', 'create', '--name', 'Shop', '--url', 'notaurl'],
      env,
    );
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/Invalid url 'notaurl': must be an http\(s\) URL/);
    expect(res.stderr).not.toMatch(/\n\s+at /);
    // the one exit-code table (docs/cli.md): a missing option is bad usage, an unreachable database a failure
    expect((await cli('server/src/cli/admin.ts', ['vendor', 'create'], env)).code).toBe(2);
    const down = await cli('server/src/cli/admin.ts', ['vendor', 'list'], {
      ...env,
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
    });
    expect(down.code).toBe(1);
    expect(down.stderr).not.toMatch(/\n\s+at /);
  });
});
