import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { ConfigError } from '../config.ts';
import { ScannerError } from '../driver/errors.ts';
import { TransportError } from '../transport/transport.ts';
import { commands } from './commands/index.ts';
import { CliError, type CliIO, createContext, EXIT } from './context.ts';

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

/** The technician CLI. Commands live in ./commands/<name>.ts and register themselves. */
export function buildProgram(io: CliIO): { program: Command; context: ReturnType<typeof createContext> } {
  const context = createContext(io);
  const program = new Command('palmid-agent')
    .description('palmid scanner host agent and technician tools')
    .option('--config <file>', 'config file (default: $PALMID_AGENT_CONFIG or ./data/agent.json)')
    .option('--device <spec>', 'scanner: serial:/dev/ttyUSB0 | tcp:HOST:PORT | hid:VID:PID | sim')
    .option('--server-url <url>', 'palmid server base URL')
    .option('--model-path <file>', 'palm feature model (.onnx)')
    .option('--baud-rate <n>', 'serial baud rate', positiveInt)
    .option('--record <file>', 'record scanner traffic as JSON lines (diagnostics)')
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .addHelpText(
      'after',
      '\nExit codes: 0 ok, 1 a check or operation failed, 2 bad usage or configuration.\n' +
        'Try the simulator: npm run sim -- --tcp 7070, then: npm run agent -- doctor --device tcp:127.0.0.1:7070',
    );
  for (const register of commands) register(program, context);
  return { program, context };
}

/** Run the CLI with `argv` (arguments after the program name); resolves to the exit code. */
export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const { program, context } = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return context.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander already printed the message or help.
      return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    if (err instanceof ConfigError) {
      io.err(`palmid-agent: ${err.message}\n`);
      return EXIT.USAGE;
    }
    if (err instanceof CliError) {
      if (err.message) io.err(`palmid-agent: ${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof ScannerError || err instanceof TransportError) {
      io.err(`palmid-agent: scanner: ${err.message}\n`);
      return EXIT.FAILED;
    }
    // Never a stack trace to a technician; PALMID_DEBUG=1 shows it for a bug report.
    const message = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    io.err(
      io.env.PALMID_DEBUG === '1' && err instanceof Error
        ? `palmid-agent: unexpected error: ${err.stack ?? err.message}\n`
        : `palmid-agent: unexpected error: ${message} (PALMID_DEBUG=1 shows the details)\n`,
    );
    return EXIT.FAILED;
  }
}
