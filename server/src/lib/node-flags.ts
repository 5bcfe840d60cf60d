/**
 * Node's flags for a server process (`npm start`, docs/deployment.md, and every server the HTTP bench
 * starts): the young generation never goes below 16 MiB a semi-space (V8 starts it at 1 MiB).
 *
 * Why (docs/performance.md, "Variance between runs"): V8 sizes its young generation from what survives its
 * scavenges, growing it with survivors and shrinking it again when few survive, so its size at any moment
 * depends on the process's history; a server's per-request garbage rarely survives. A process left with
 * small semi-spaces scavenges every few hundred requests, each time promoting the requests in flight to the
 * old generation. Measured with the same Fastify route in processes of the same code, that state cost 14–16
 * µs of CPU per request against 11 µs with this flag; palmid's reads 3–4 µs more. V8 cannot change this
 * after start-up (not from `v8.setFlagsFromString`, not from NODE_OPTIONS, which refuses this flag), so it is
 * a command-line flag.
 */
export const SERVER_NODE_FLAGS = ['--min-semi-space-size=16'] as const;

/** Whether this process was started with the flags above (`process.execArgv`). */
export function hasServerNodeFlags(execArgv: readonly string[] = process.execArgv): boolean {
  return SERVER_NODE_FLAGS.every((flag) => execArgv.includes(flag));
}
