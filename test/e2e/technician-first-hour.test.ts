import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  kioskAgentEnv,
  lastJson,
  run,
  type ServerProc,
  type SimProc,
  sqliteServerEnv,
  start,
  startServer,
  startSim,
  tempDir,
} from './harness.ts';

/**
 * What a kiosk installer meets in the first hour (docs/kiosk-install.md), with the real server, simulator
 * and agent processes: doctor checks the credentials against the server, `run` stops on a refused token,
 * `capture` checks its output path first, `enroll` on a vendor's kiosk refuses before anyone holds a palm.
 */
describe('kiosk technician, first hour', () => {
  const tmp = tempDir('palmid-tech-hour-');
  const serverEnv = sqliteServerEnv(tmp.dir);
  let server: ServerProc;
  let sim: SimProc;
  let kiosk: { pvs_id: string; device_token: string };
  let bound: { pvs_id: string; device_token: string };
  let vendor: { vendor_id: string };
  const agent = (args: string[], env: Record<string, string>, timeoutMs = 60_000) =>
    cli('agent/src/cli/main.ts', args, env, timeoutMs);
  const envFor = (k: { pvs_id: string; device_token: string }, file = 'agent.json') =>
    kioskAgentEnv(`${tmp.dir}/${file}`, sim, server.base, k);
  const noStack = (r: { stdout: string; stderr: string }) =>
    expect(`${r.stdout}\n${r.stderr}`).not.toMatch(/\n\s+at \S+ \(|node:internal|libvips|VipsForeign/);

  beforeAll(async () => {
    server = await startServer(serverEnv);
    const admin = async <T>(...args: string[]) =>
      lastJson<T>(
        await run('server/src/cli/admin.ts', ['--json', ...args], {
          DATABASE_URL: serverEnv.DATABASE_URL,
          PALMID_KEY_FILE: serverEnv.PALMID_KEY_FILE,
        }),
      );
    vendor = await admin('vendor', 'create', '--name', 'Till Shop', '--url', 'https://till.example');
    kiosk = await admin('pvs', 'create', '--name', 'lobby');
    bound = await admin('pvs', 'create', '--name', 'till-1', '--vendor', vendor.vendor_id);
    sim = await startSim(['--capture-ms', '100']);
  }, 120_000);

  afterAll(async () => {
    await sim?.stop();
    await server?.stop();
    tmp.remove();
  });

  it('doctor checks the device token and pvsId against the server', async () => {
    const good = await agent(['doctor', '--json'], envFor(kiosk));
    const goodChecks = lastJson<{ ok: boolean; checks: { name: string; status: string; detail: string }[] }>(
      good.stdout,
    );
    const token = goodChecks.checks.find((c) => c.name === 'token')!;
    expect(token.status, token.detail).toBe('ok');
    expect(token.detail).toMatch(/accepts this kiosk.*unbound/);

    const boundRes = lastJson<{ checks: { name: string; detail: string }[] }>(
      (await agent(['doctor', '--json'], envFor(bound))).stdout,
    );
    expect(boundRes.checks.find((c) => c.name === 'token')!.detail).toMatch(
      new RegExp(`serves vendor ${vendor.vendor_id}`),
    );

    const wrong = await agent(['doctor'], envFor({ ...kiosk, device_token: `dt_${'x'.repeat(43)}` }));
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toMatch(/✘ token\s+the server refused the device token/);
    expect(wrong.stdout).not.toMatch(/all checks passed/);
    noStack(wrong);

    const swapped = await agent(
      ['doctor'],
      envFor({ pvs_id: bound.pvs_id, device_token: kiosk.device_token }),
    );
    expect(swapped.code).toBe(1);
    expect(swapped.stdout).toMatch(/✘ token\s+the server refused pvsId/);
  }, 120_000);

  it('agent run says why the server closed the link and stops retrying a refused token', async () => {
    const p = start(
      'agent/src/cli/main.ts',
      ['run'],
      envFor({ ...kiosk, device_token: `dt_${'y'.repeat(43)}` }),
    );
    await p.waitFor(
      /link closed \(1008 unauthorized\): the server refused the device token.*not retrying/,
      60_000,
    );
    await p.waitFor(/stopping: the server refused the device token/);
    const code = await new Promise<number | null>((resolve) => {
      if (p.child.exitCode !== null) resolve(p.child.exitCode);
      else p.child.once('exit', (c) => resolve(c));
    });
    expect(code).toBe(2); // configuration: systemd does not restart into the same refusal
    expect(p.output.filter((l) => /reconnecting in/.test(l))).toEqual([]);
  }, 90_000);

  it('a kiosk revoked while it runs stops at once and says so (exit 2)', async () => {
    const spare = lastJson<{ pvs_id: string; device_token: string }>(
      await run('server/src/cli/admin.ts', ['--json', 'pvs', 'create', '--name', 'spare'], {
        DATABASE_URL: serverEnv.DATABASE_URL,
        PALMID_KEY_FILE: serverEnv.PALMID_KEY_FILE,
      }),
    );
    const p = start('agent/src/cli/main.ts', ['run'], envFor(spare, 'spare.json'));
    await p.waitFor(/connected to /, 60_000);
    await run('server/src/cli/admin.ts', ['pvs', 'revoke', spare.pvs_id], {
      DATABASE_URL: serverEnv.DATABASE_URL,
      PALMID_KEY_FILE: serverEnv.PALMID_KEY_FILE,
    });
    await p.waitFor(/link closed \(1008 (revoked|unauthorized)\): .*not retrying/, 30_000);
    const code = await new Promise<number | null>((resolve) => {
      if (p.child.exitCode !== null) resolve(p.child.exitCode);
      else p.child.once('exit', (c) => resolve(c));
    });
    expect(code).toBe(2);
  }, 120_000);

  it('unplugging the scanner for 3 s: one "disconnected" line, one reconnect loop, one "reconnected" line', async () => {
    const spare = lastJson<{ pvs_id: string; device_token: string }>(
      await run('server/src/cli/admin.ts', ['--json', 'pvs', 'create', '--name', 'unplugged'], {
        DATABASE_URL: serverEnv.DATABASE_URL,
        PALMID_KEY_FILE: serverEnv.PALMID_KEY_FILE,
      }),
    );
    const p = start('agent/src/cli/main.ts', ['run'], envFor(spare, 'unplugged.json'));
    try {
      await p.waitFor(/kiosk ready/, 60_000);
      await p.waitFor(/connected to /, 60_000);
      await sim.post('/unplug', { ms: 3000 });
      await p.waitFor(/scanner reconnected/, 30_000);
      // a while longer: a second loop would go on printing
      await new Promise((r) => setTimeout(r, 1500));
      const lines = p.output.join('\n');
      expect(lines.match(/scanner disconnected/g) ?? [], lines).toHaveLength(1);
      expect(lines.match(/scanner reconnected/g) ?? [], lines).toHaveLength(1);
      expect(
        p.output.filter((l) => /scanner error/.test(l)),
        lines,
      ).toEqual([]);
    } finally {
      await p.stop();
    }
  }, 120_000);

  it('capture checks --out before capturing: a missing directory is exit 2 and one line', async () => {
    const res = await agent(['capture', '--out', '/nonexistent/dir/x.png'], envFor(kiosk));
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(
      /--out \/nonexistent\/dir\/x\.png: directory \/nonexistent\/dir does not exist/,
    );
    expect(res.stderr).not.toMatch(/waiting for a palm|scanner:/);
    noStack(res);
  });

  it('enroll with the defaults against a simulator that shows one hand enrols that hand and says so', async () => {
    // what `npm run sim` does by default: one walk-up person showing the right hand
    await sim.autoPresent({ identity: 'tech-walkup', hand: 'right' });
    const res = await agent(['enroll'], envFor(kiosk), 120_000);
    await sim.autoPresent({ off: true });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toMatch(/Hold your RIGHT palm over the scanner \(3\/3\)/);
    expect(res.stderr).toMatch(/Hold your LEFT palm over the scanner \(1\/3\)/);
    expect(res.stderr).toMatch(
      /the left hand was not shown; enrolling the right hand alone \(add the left one later: enroll --code\)/,
    );
    expect(res.stdout).toMatch(/Your claim code: {2}[A-Z2-9]{5}-[A-Z2-9]{5}/);
    noStack(res);
  }, 150_000);

  it('enroll --hands right,left (given) still requires both hands', async () => {
    await sim.autoPresent({ identity: 'tech-walkup-2', hand: 'right' });
    const res = await agent(
      ['enroll', '--hands', 'right,left', '--samples', '1', '--max-attempts', '2'],
      envFor(kiosk),
      120_000,
    );
    await sim.autoPresent({ off: true });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/no usable capture of the left palm after 2 attempts/);
    expect(res.stderr).not.toMatch(/enrolling the right hand alone/);
  }, 150_000);

  it('enroll --code checks the code before anyone holds a hand over the scanner', async () => {
    const res = await agent(['enroll', '--code', 'ABCDE-23456'], envFor(kiosk));
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(
      /the code ABCDE-23456 is unknown, used or expired: ask the user for a new one .*nothing was captured/,
    );
    expect(res.stderr).not.toMatch(/Hold your/);
    noStack(res);
  }, 60_000);

  it('a refused device token leaves no device-key file; an accepted one makes it', async () => {
    const fresh = lastJson<{ pvs_id: string; device_token: string; provisioning_secret: string }>(
      await run('server/src/cli/admin.ts', ['--json', 'pvs', 'create', '--name', 'fresh'], {
        DATABASE_URL: serverEnv.DATABASE_URL,
        PALMID_KEY_FILE: serverEnv.PALMID_KEY_FILE,
      }),
    );
    const wrongKey = `${tmp.dir}/wrong.device-key.pem`;
    const wrong = await agent(
      ['enroll', '--hands', 'right', '--samples', '1'],
      envFor({ ...fresh, device_token: `dt_${'z'.repeat(43)}` }, 'wrong.json'),
    );
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/refused the device token/);
    expect(existsSync(wrongKey)).toBe(false);
    expect(existsSync(`${wrongKey}.counter`)).toBe(false);
    expect(`${wrong.stdout}${wrong.stderr}`).not.toMatch(/made a new device key/);

    // the same config with the right token: the key is written once the server accepted the kiosk
    const right = await agent(['enroll', '--code', 'ABCDE-23456'], envFor(fresh, 'wrong.json'));
    expect(right.code).toBe(2); // the code is wrong, the credentials are not
    expect(right.stderr).toMatch(/made a new device key at .*wrong\.device-key\.pem/);
    expect(existsSync(wrongKey)).toBe(true);
  }, 120_000);

  it('enroll on a kiosk bound to a vendor refuses before any capture', async () => {
    const res = await agent(['enroll', '--hands', 'right', '--samples', '1'], envFor(bound, 'bound.json'));
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/bound to vendor .*only kiosks without a vendor enrol/);
    expect(res.stderr).not.toMatch(/Hold your/);
    noStack(res);
  }, 60_000);
});
