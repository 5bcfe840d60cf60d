import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ScannerDriver } from '@palmid/agent/driver/scanner-driver';
import { SerialTransport } from '@palmid/agent/transport/serial';
import { FirmwareSimulator, openPty, socatAvailable, testPatternSource } from '@palmid/firmware-sim';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { describeNeeding } from '../support/requirements.ts';

const NO_SOCAT = socatAvailable() ? null : 'socat not installed (apt-get install socat)';

const ROOT = resolve(import.meta.dirname, '../..');
const TSX = join(ROOT, 'node_modules/.bin/tsx');
const DEMO = { identity: 'demo', hand: 'right' } as const;

const expected = async (capture: number) =>
  Buffer.from((await testPatternSource.render({ ...DEMO, capture, width: 320, height: 240 })).data);

describeNeeding(NO_SOCAT)('real serialport stack ↔ simulator over a socat pty', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup() {
    const sim = new FirmwareSimulator({
      source: testPatternSource,
      autoPresent: DEMO,
      captureMs: 30,
      autoPresentDelayMs: 5,
    });
    const pty = await openPty(sim);
    const driver = new ScannerDriver(new SerialTransport(pty.path, 115_200), {
      timeoutMs: 300,
      retries: 3,
      pollMs: 10,
      reconnectInitialMs: 50,
      reconnectMaxMs: 200,
    });
    cleanups.push(
      () => sim.stop(),
      () => pty.close(),
      () => driver.close(),
    );
    return { sim, pty, driver };
  }

  it('identifies the device and transfers an image byte-exactly', async () => {
    const { driver } = await setup();
    const info = await driver.connect();
    expect(info.model).toMatch(/PV-320/);
    const img = await driver.capture();
    expect(Buffer.from(img.data).equals(await expected(0))).toBe(true);
  });

  it('recovers from line noise on the real tty', async () => {
    const { sim, driver } = await setup();
    await driver.connect();
    sim.injectFault({ kind: 'crc-noise', probability: 0.04 });
    sim.injectFault({ kind: 'garbage', bytes: 24, probability: 0.3 });
    const img = await driver.capture();
    expect(Buffer.from(img.data).equals(await expected(0))).toBe(true);
    expect(driver.stats!.droppedBytes).toBeGreaterThan(0);
  });

  it('unplug mid-image: the port disappears, the driver reports it and reconnects when it returns', async () => {
    const { sim, driver } = await setup();
    await driver.connect();
    sim.injectFault({ kind: 'unplug-mid-image', atOffset: 20_000, forMs: 300 });
    const reconnected = new Promise((r) => driver.once('reconnected', r));
    const err = await driver.capture().catch((e: Error & { code?: string }) => e);
    expect(err).toMatchObject({ code: 'DISCONNECTED' });
    await reconnected;
    const img = await driver.capture();
    expect(img.data.length).toBe(76_800);
  });
});

describeNeeding(NO_SOCAT)('technician CLI against the simulator CLI (separate processes)', () => {
  let sim: ChildProcess;
  let dir: string;
  let device: string;
  let simOutput = '';
  let deadServer = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'palmid-cli-'));
    // A port that was free a moment ago: nothing answers there.
    const probe = createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    deadServer = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    probe.close();
    const tty = join(dir, 'ttyPALM0');
    sim = spawn(TSX, ['firmware-sim/src/cli.ts', '--pty', tty, '--source', 'pattern', '--capture-ms', '50'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    device = await new Promise<string>((resolvePath, reject) => {
      const timer = setTimeout(() => reject(new Error(`simulator did not start:\n${simOutput}`)), 20_000);
      const onData = (d: Buffer) => {
        simOutput += d.toString();
        const m = /device ready: (serial:\S+)\n.*try: npm run agent -- doctor --device \S+\n/.exec(simOutput);
        if (m) {
          clearTimeout(timer);
          resolvePath(m[1]!);
        }
      };
      sim.stdout!.on('data', onData);
      sim.stderr!.on('data', onData);
      sim.once('exit', (code) => reject(new Error(`simulator exited (${code}):\n${simOutput}`)));
    });
  });

  afterAll(async () => {
    if (sim && sim.exitCode === null) {
      const exited = new Promise((r) => sim.once('exit', r));
      sim.kill('SIGTERM');
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function agent(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolveRun) => {
      const child = spawn(TSX, ['agent/src/cli/main.ts', ...args], {
        cwd: ROOT,
        env: { ...process.env, PALMID_AGENT_CONFIG: join(dir, 'agent.json'), PALMID_SERVER_URL: deadServer },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('exit', (code) => resolveRun({ code, stdout, stderr }));
    });
  }

  it('the simulator prints the device path to use', () => {
    expect(device).toMatch(/^serial:\/.*ttyPALM0$/);
    expect(simOutput).toContain(`npm run agent -- doctor --device ${device}`);
  });

  it('doctor reports the device and firmware, flags the missing server, exits 1', async () => {
    const r = await agent(['doctor', '--device', device]);
    expect(r.stdout).toMatch(/✔ device\s+serial:.*PalmVein PV-320 \(simulated\)/);
    expect(r.stdout).toMatch(/✔ firmware\s+version 1\.4\.0-sim, wire protocol v1/);
    // the label column is as wide as the longest check name, so match the gap, not a fixed width
    expect(r.stdout).toMatch(
      new RegExp(`✘ server\\s+${deadServer.replace(/[.]/g, '\\.')}/health: connection refused`),
    );
    expect(r.stdout).toMatch(/- clock\s+skipped: server unreachable/);
    expect(r.code).toBe(1);
  });

  it('capture writes an 8-bit grayscale PNG of the presented palm', async () => {
    const out = join(dir, 'palm.png');
    const r = await agent(['capture', '--out', out, '--device', device]);
    expect(r.stderr).toContain('reading image');
    expect(r.stdout).toContain(`saved ${out} (320×240`);
    expect(r.code).toBe(0);
    expect(await sharp(out).metadata()).toMatchObject({
      format: 'png',
      width: 320,
      height: 240,
      channels: 1,
    });
    const data = await sharp(out).extractChannel(0).raw().toBuffer();
    expect(data.equals(await expected(0))).toBe(true);
  });

  it('a wrong port fails with advice, not a stack trace', async () => {
    const r = await agent(['capture', '--out', join(dir, 'x.png'), '--device', 'serial:/dev/ttyNOPE7']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/palmid-agent: scanner: serial:\/dev\/ttyNOPE7: no such device/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
