/**
 * The last line of defence of every command-line entry point (docs/cli.md): an error nothing else caught
 * (a throw at start-up, a rejected promise nobody awaited) is reported as one line naming the program,
 * never as a stack trace, and the process exits 1. `PALMID_DEBUG=1` prints the stack for a bug report.
 */
export function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n').find((l) => l.trim() !== '') ?? text;
}

export function installFatalHandlers(program: string, exitCode = 1): void {
  const report = (err: unknown) => {
    const detail =
      process.env.PALMID_DEBUG === '1' && err instanceof Error
        ? (err.stack ?? err.message)
        : `${oneLine(err)} (PALMID_DEBUG=1 shows the details)`;
    process.stderr.write(`${program}: unexpected error: ${detail}\n`);
    process.exit(exitCode);
  };
  process.on('uncaughtException', report);
  process.on('unhandledRejection', report);
}
