import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { deviceKeyPath } from '@palmid/agent/attestation/device-key';
import { afterAll, describe, expect, it } from 'vitest';
import { type Proc, start, tempDir } from './harness.ts';

/**
 * `npm start` in development runs a simulated kiosk of its own (server/dev/sim-kiosk.ts). Its device key
 * must not be the one a technician's agent makes by default beside `<data>/agent.json` for a kiosk of
 * their own: two kiosks would then share one key.
 */
describe("npm start's built-in kiosk", () => {
  const tmp = tempDir('palmid-builtin-kiosk-');
  let server: Proc | undefined;
  afterAll(async () => {
    await server?.stop();
    tmp.remove();
  });

  it('keeps its device key under its own name, not the default agent.json key', async () => {
    server = start(
      'server/src/main.ts',
      [],
      {
        DATABASE_URL: `sqlite:${tmp.dir}/palmid.db`,
        PALMID_KEY_FILE: `${tmp.dir}/master.key`,
        PALMID_ENV: 'development',
        PALMID_SIM: '1',
        PORT: '0',
      },
      'server',
    );
    await server.waitFor(/connected to http:\/\/\S+ as kiosk/, 90_000);
    const own = join(tmp.dir, 'sim-kiosk.device-key.pem');
    await server.waitFor(/made a new device key at .*sim-kiosk\.device-key\.pem/, 10_000);
    expect(existsSync(own)).toBe(true);
    // the key a technician's `npm run agent` makes by default beside <data>/agent.json is another file
    const technicians = deviceKeyPath(join(tmp.dir, 'agent.json'));
    expect(technicians).not.toBe(own);
    expect(existsSync(technicians)).toBe(false);
  }, 120_000);
});
