import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkClock } from './doctor-checks.ts';
import { runCli } from './program.ts';

const dir = mkdtempSync(join(tmpdir(), 'palmid-cli-unit-'));

async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    out: (s) => {
      stdout += s;
    },
    err: (s) => {
      stderr += s;
    },
    env: { PALMID_AGENT_CONFIG: join(dir, 'agent.json'), ...env },
    interactive: false,
  });
  return { code, stdout, stderr };
}

/** A stand-in palmid server: /health with a configurable body and Date header. */
let health: { status: number; body: unknown; date?: string } = {
  status: 200,
  body: { status: 'ok', version: 'test' },
};
let server: Server;
let serverUrl: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url !== '/health') {
      res.writeHead(404).end();
      return;
    }
    if (health.date) res.setHeader('Date', health.date);
    res.writeHead(health.status, { 'content-type': 'application/json' }).end(JSON.stringify(health.body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('technician CLI', () => {
  it.each([[[]], [['devices']], [['doctor']], [['capture']], [['config']], [['config', 'set']]])(
    '--help works for %j',
    async (args) => {
      const r = await cli([...args, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^Usage: palmid-agent/);
    },
  );

  it('unknown commands and options are usage errors (exit 2)', async () => {
    expect((await cli(['frobnicate'])).code).toBe(2);
    const r = await cli(['capture']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/required option '-o, --out <file>'/);
  });

  it('config set / show / unset round trip; secrets are hidden unless asked', async () => {
    const file = join(dir, 'roundtrip.json');
    expect((await cli(['--config', file, 'config', 'set', 'device', 'tcp:127.0.0.1:7070'])).code).toBe(0);
    expect((await cli(['--config', file, 'config', 'set', 'deviceToken', 'pvs_0123456789abcdef'])).code).toBe(
      0,
    );
    const shown = await cli(['--config', file, 'config', 'show']);
    expect(shown.stdout).toMatch(/device\s+tcp:127\.0\.0\.1:7070\s+\[file; env PALMID_DEVICE\]/);
    expect(shown.stdout).toMatch(/deviceToken\s+pvs_…\(hidden\)/);
    expect(shown.stdout).not.toContain('0123456789abcdef');
    const json = JSON.parse((await cli(['--config', file, 'config', 'show', '--json', '--reveal'])).stdout);
    expect(json.config.deviceToken).toBe('pvs_0123456789abcdef');
    const withFlag = JSON.parse(
      (await cli(['--config', file, '--device', 'sim', 'config', 'show', '--json'])).stdout,
    );
    expect(withFlag).toMatchObject({ config: { device: 'sim' }, sources: { device: 'flag' } });
    await cli(['--config', file, 'config', 'unset', 'device']);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ deviceToken: 'pvs_0123456789abcdef' });
  });

  it('bad configuration is one line naming the key, exit 2', async () => {
    const r = await cli(['config', 'set', 'baudRate', 'quick']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('palmid-agent: config: baudRate: must be a number\n');
    const r2 = await cli(['doctor'], { PALMID_SERVER_URL: 'not a url' });
    expect(r2.code).toBe(2);
    expect(r2.stderr.trim().split('\n')).toHaveLength(1);
    expect(r2.stderr).toMatch(/serverUrl \(from env PALMID_SERVER_URL\)/);
  });

  it('doctor passes against the in-process simulator and a healthy server', async () => {
    health = { status: 200, body: { status: 'ok', version: 'abc123' } };
    // No kiosk credentials: only a warning here (this fake server speaks /health only); checking a token
    // against a real server is test/e2e/technician-first-hour.test.ts.
    const r = await cli(['doctor', '--device', 'sim', '--server-url', serverUrl]);
    expect(r.stdout).toMatch(/! token\s+no device token/);
    expect(r.stdout).toMatch(/✔ device\s+sim: PalmVein PV-320 \(simulated\), S\/N SIM-000001/);
    expect(r.stdout).toMatch(/✔ model\s+.*palm-features\.onnx/);
    expect(r.stdout).toMatch(/✔ server\s+.*\/health: ok, version abc123/);
    expect(r.stdout).toMatch(/✔ clock\s+within \d s of the server/);
    expect(r.stdout).toContain('all checks passed');
    expect(r.code).toBe(0);
  });

  it('doctor fails on an unhealthy server, a skewed clock, a missing model and a missing device', async () => {
    health = {
      status: 503,
      body: { status: 'degraded' },
      date: new Date(Date.now() + 120_000).toUTCString(),
    };
    const r = await cli([
      'doctor',
      '--json',
      '--device',
      'tcp:127.0.0.1:1',
      '--server-url',
      serverUrl,
      '--model-path',
      join(dir, 'nope.onnx'),
    ]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as {
      ok: boolean;
      checks: Array<{ name: string; status: string; detail: string }>;
    };
    const by = Object.fromEntries(report.checks.map((c) => [c.name, c]));
    expect(report.ok).toBe(false);
    expect(by.device).toMatchObject({ status: 'fail' });
    expect(by.device!.detail).toMatch(/connection refused/);
    expect(by.model).toMatchObject({ status: 'fail', detail: expect.stringMatching(/file not found/) });
    expect(by.server).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/HTTP 503, status "degraded"/),
    });
    expect(by.clock).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/1\d\d\.\d s behind the server/),
    });
    expect(by.token).toMatchObject({ status: 'warn' });
  });

  it('capture --device sim writes a grayscale PNG', async () => {
    const out = join(dir, 'palm.png');
    const r = await cli(['capture', '--device', 'sim', '--out', out, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ file: out, width: 320, height: 240 });
    expect(r.stderr).toContain('reading image (76800 bytes)');
    expect(await sharp(out).metadata()).toMatchObject({
      width: 320,
      height: 240,
      channels: 1,
      format: 'png',
    });
  });

  it('capture --check runs the palm pipeline under the configured sensor profile', async () => {
    const out = join(dir, 'checked.png');
    const r = await cli(['capture', '--device', 'sim', '--out', out, '--json', '--check'], {
      PALMID_SENSOR: 'grey-dark',
    });
    expect(r.code, r.stderr).toBe(0);
    const check = JSON.parse(r.stdout).check;
    expect(check.sensor).toBe('grey-dark');
    // the simulated scanner's live palm passes the camera profile's gates
    expect(check).toMatchObject({ ok: true });
    expect(['left', 'right']).toContain(check.hand);
    const help = await cli(['config', '--help']);
    expect(help.stdout).toMatch(/Sensor profiles[\s\S]*grey-dark[\s\S]*detects:/);
    const bad = await cli(['config', 'set', 'sensor', 'webcam']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/sensor: must be one of/);
  }, 60_000);

  it('capture refuses an output it cannot write in the asked format', async () => {
    const r = await cli(['capture', '--device', 'sim', '--out', join(dir, 'palm.jpg')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--out must end in \.png or \.raw/);
    expect(existsSync(join(dir, 'palm.jpg'))).toBe(false);
  });

  it('devices lists candidates or says none were found, and always exits 0', async () => {
    const r = await cli(['devices', '--json']);
    expect(r.code).toBe(0);
    const parsed = JSON.parse(r.stdout) as { devices: unknown[]; notes: string[] };
    expect(Array.isArray(parsed.devices)).toBe(true);
  });
});

describe('clock skew from the Date header', () => {
  const probe = (serverDate: number, local: number, rttMs = 10) => ({
    result: { name: 'server', status: 'ok' as const, detail: '' },
    serverDate,
    localMidpoint: local,
    rttMs,
  });
  it('treats the Date header truncation as noise', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(checkClock(probe(now, now + 900)).status).toBe('ok');
    expect(checkClock(probe(now, now - 3000)).status).toBe('ok');
  });
  it('fails beyond the limit, saying which way', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(checkClock(probe(now, now + 30_000))).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/ahead of/),
    });
    expect(checkClock(probe(now + 30_000, now))).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/behind/),
    });
  });
  it('is skipped when the server was unreachable', () => {
    expect(checkClock({ result: { name: 'server', status: 'fail', detail: '' } }).status).toBe('skip');
  });
});
