import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FirmwareSimulator } from '../device.ts';
import { streamLink } from './stream-link.ts';

export interface PtyEndpoint {
  /** Stable path (a symlink to the current /dev/pts/N) the agent opens as a serial port. */
  path: string;
  /** Device spec for the agent, e.g. `serial:/tmp/palmid-sim-x/ttyPALM0`. */
  device: string;
  close(): Promise<void>;
}

export function socatAvailable(): boolean {
  const r = spawnSync('socat', ['-V'], { stdio: 'ignore' });
  return r.status === 0;
}

/**
 * Expose the device as a real pseudo-terminal via socat: `socat pty,link=PATH STDIO` creates the
 * pty and relays it to our stdin/stdout, so the agent's serialport stack talks to a real tty.
 * Unplug kills socat (the device node disappears, as with USB); replug starts it again at the same path.
 */
export async function openPty(sim: FirmwareSimulator, path?: string): Promise<PtyEndpoint> {
  if (!socatAvailable()) {
    throw new Error('socat is not installed (apt-get install socat); it is needed to create a pty');
  }
  let tmpDir: string | undefined;
  if (!path) {
    tmpDir = mkdtempSync(join(tmpdir(), 'palmid-sim-'));
    path = join(tmpDir, 'ttyPALM0');
  }
  const linkPath = path;
  let child: ChildProcess | undefined;
  let closing = false;

  const start = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const proc = spawn('socat', ['-d', '-d', `pty,raw,echo=0,link=${linkPath}`, 'STDIO'], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      child = proc;
      let ready = false;
      let errText = '';
      proc.stderr!.on('data', (d: Buffer) => {
        errText += d.toString();
        if (!ready && errText.includes('starting data transfer loop')) {
          ready = true;
          sim.attach(streamLink(proc.stdout!, proc.stdin!, () => proc.kill()));
          resolve();
        }
        if (errText.length > 8192) errText = errText.slice(-4096);
      });
      proc.on('error', reject);
      proc.on('exit', (code) => {
        if (child === proc) child = undefined;
        if (!ready) {
          reject(
            new Error(
              `socat exited (${code}) before the pty was ready: ${errText.trim().split('\n').at(-1)}`,
            ),
          );
          return;
        }
        // socat should only die when we kill it; if it dies on its own, bring the port back.
        if (!closing && sim.isPlugged) void start().catch(() => {});
      });
    });

  const stopChild = () =>
    new Promise<void>((resolve) => {
      const proc = child;
      if (!proc || proc.exitCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill();
    });

  const onUnplug = () => void stopChild();
  const onReplug = () => void start().catch(() => {});
  const onStop = () => void endpoint.close();
  sim.on('unplugged', onUnplug);
  sim.on('replugged', onReplug);
  sim.once('stopped', onStop);

  await start();

  const endpoint: PtyEndpoint = {
    path: linkPath,
    device: `serial:${linkPath}`,
    async close() {
      closing = true;
      sim.off('unplugged', onUnplug);
      sim.off('replugged', onReplug);
      sim.off('stopped', onStop);
      await stopChild();
      if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
    },
  };
  return endpoint;
}
