import { installFatalHandlers } from '@palmid/contracts/cli/fatal';
import { runCli } from './program.ts';

installFatalHandlers('palmid-agent');

const code = await runCli(process.argv.slice(2), {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  env: process.env,
  interactive: Boolean(process.stderr.isTTY),
});
// Let stdout drain, then exit even if a native handle (serial, HID) lingers.
process.exitCode = code;
setTimeout(() => process.exit(code), 50).unref();
