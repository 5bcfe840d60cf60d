import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEMO_IDENTITY } from './demo.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** A development package's folder, found the way Node finds the package (its devDependencies). */
const packageDir = (name: string) => dirname(createRequire(import.meta.url).resolve(`${name}/package.json`));
const SIM_CLI = join(packageDir('@palmid/firmware-sim'), 'src/cli.ts');
const AGENT_CLI = join(packageDir('@palmid/agent'), 'src/cli/main.ts');

export interface SimKiosk {
  stop(): Promise<void>;
}

function pipe(child: ChildProcess, prefix: string, onLine?: (line: string) => void): void {
  let rest = '';
  const handle = (chunk: Buffer) => {
    const lines = (rest + chunk.toString('utf8')).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      process.stdout.write(`${prefix} ${line}\n`);
      onLine?.(line);
    }
  };
  child.stdout?.on('data', handle);
  child.stderr?.on('data', handle);
}

/**
 * `npm start`'s simulated kiosk: the firmware simulator (walk-up palm: the demo identity) and the agent
 * daemon, as two child processes, exactly as on a real kiosk host.
 */
export async function startSimKiosk(
  serverUrl: string,
  pvsId: string,
  deviceToken: string,
  dataDir: string,
  provisioningSecret?: string,
): Promise<SimKiosk> {
  const sim = spawn(
    process.execPath,
    ['--import', 'tsx', SIM_CLI, '--tcp', '0', '--control', '0', '--palm', `${DEMO_IDENTITY}:right`],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const device = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the firmware simulator did not start')), 60_000);
    pipe(sim, '[sim]', (line) => {
      const m = /device ready: (tcp:\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    sim.once('exit', (code) => reject(new Error(`the firmware simulator exited (${code})`)));
  });
  const agent = spawn(process.execPath, ['--import', 'tsx', AGENT_CLI, 'run'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      // its own config name, so its device key (sim-kiosk.device-key.pem) is never the one a technician's
      // agent makes by default beside ./data/agent.json for a kiosk of their own
      PALMID_AGENT_CONFIG: `${dataDir}/sim-kiosk.json`,
      PALMID_DEVICE: device,
      PALMID_SERVER_URL: serverUrl,
      PALMID_PVS_ID: pvsId,
      PALMID_DEVICE_TOKEN: deviceToken,
      // binds the agent's device key (made in dataDir) to the demo kiosk at its first hello
      ...(provisioningSecret ? { PALMID_PROVISIONING_SECRET: provisioningSecret } : {}),
    },
  });
  pipe(agent, '[kiosk]');
  const stopChild = (c: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (c.exitCode !== null) return resolve();
      c.once('exit', () => resolve());
      c.kill('SIGTERM');
      setTimeout(() => c.kill('SIGKILL'), 3000).unref();
    });
  return {
    async stop() {
      await stopChild(agent);
      await stopChild(sim);
    },
  };
}
