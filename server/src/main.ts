import { createContext } from './bootstrap.ts';
import { ConfigError, loadConfig } from './config.ts';
import { seedDemo } from './demo.ts';
import { startServer } from './server.ts';

/** `npm start`: the server (and, unless PALMID_SIM=0, a simulated kiosk). */
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
  const demo = config.PALMID_ENV === 'development' ? await seedDemo(ctx) : undefined;
  const base = `http://${config.HOST}:${server.port}`;
  if (demo) {
    process.stdout.write(
      [
        '',
        `palmid ${ctx.version} (development) on ${base} — OpenAPI: ${base}/docs`,
        `  demo vendor:  ${demo.vendorId}`,
        `  vendor key:   ${demo.apiKey}`,
        `  demo user:    ${demo.userId}`,
        `  user token:   ${demo.userToken}`,
        '',
        'Try it:',
        `  curl -s ${base}/api/v1/status -H 'X-API-Key: ${demo.apiKey}'`,
        `  curl -s ${base}/v1/attributes -H 'Authorization: Bearer ${demo.userToken}'`,
        '',
      ].join('\n'),
    );
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    server.app.log.info(`${signal}: shutting down`);
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
