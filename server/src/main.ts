import { dirname } from 'node:path';
import type { Demo } from '../dev/demo.ts';
import type { SimKiosk } from '../dev/sim-kiosk.ts';
import { createContext } from './bootstrap.ts';
import { ConfigError, loadConfig } from './config.ts';
import { startServer } from './server.ts';

/** What the banner says under the demo vendor key (server/dev/demo.ts, docs/quickstart.md). */
const KEY_NOTES: Record<Demo['apiKeyState'], string> = {
  kept: '                (the same key as on earlier starts with this database and master key)',
  created: '                (a new demo vendor; its key stays the same on later starts)',
  restored:
    '                ^ RESTORED: the demo key is active again; a key from `admin vendor rotate-key` no longer works',
  new: '                ^ NEW KEY: the demo key printed by earlier starts no longer works (new master key?)',
};

function banner(base: string, version: string, demo: Demo): string {
  const key = demo.apiKey;
  return [
    '',
    `palmid ${version} (development) on ${base} — OpenAPI: ${base}/docs`,
    `  demo vendor:  ${demo.vendorId}`,
    `  vendor key:   ${key}`,
    KEY_NOTES[demo.apiKeyState],
    `  demo user:    ${demo.vendorUserId} (the demo vendor's id for it; the user's own: ${demo.userId})`,
    `  user token:   ${demo.userToken}`,
    '',
    'Try a payment (the simulated kiosk presents the demo palm):',
    `  curl -s -X POST ${base}/api/v1/auth/create -H 'X-API-Key: ${key}' -H 'Content-Type: application/json' \\`,
    `       -d '{"auth_context":{"type":"payment","amount":1250,"attributes_optional":["email"]}}'`,
    `  curl -s ${base}/api/v1/auth/<auth_id>/status -H 'X-API-Key: ${key}'`,
    'The user side:',
    `  curl -s ${base}/v1/attributes -H 'Authorization: Bearer ${demo.userToken}'`,
    '',
  ].join('\n');
}

/** `npm start`: the server and, unless PALMID_SIM=0, a simulated kiosk (firmware simulator + agent). */
async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const ctx = await createContext(config);
  const server = await startServer(ctx);
  const base = `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${server.port}`;
  let kiosk: SimKiosk | undefined;
  if (config.PALMID_ENV === 'development') {
    // The demo and the simulated kiosk live in server/dev/ (they pull the simulator and the agent, which a
    // production install leaves out): loaded only in development.
    const { seedDemo } = await import('../dev/demo.ts');
    const demo = await seedDemo(ctx);
    if (config.PALMID_SIM === '1') {
      const dataDir = config.DATABASE_URL.startsWith('sqlite:')
        ? dirname(config.DATABASE_URL.slice(7))
        : './data';
      const { startSimKiosk } = await import('../dev/sim-kiosk.ts');
      kiosk = await startSimKiosk(base, demo.pvsId, demo.deviceToken, dataDir, demo.provisioningSecret);
    }
    process.stdout.write(banner(base, ctx.version, demo));
  } else if (config.PALMID_SIM === '1') {
    server.app.log.info(
      'simulated kiosk only runs in development (PALMID_ENV=development); running the server alone',
    );
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.app.log.info(`${signal}: shutting down`);
    await kiosk?.stop();
    await server.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  process.stderr.write(`palmid failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
