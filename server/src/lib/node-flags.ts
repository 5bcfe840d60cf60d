import { getHeapSpaceStatistics } from 'node:v8';

/**
 * Node's flags for a server process (`npm start`, docs/deployment.md, and every server the HTTP bench
 * starts): the young generation starts at 16 MiB a semi-space instead of 1 MiB.
 *
 * Why (docs/performance.md, "Variance between runs"): V8 grows its young generation only when many objects
 * survive a scavenge, and a server's per-request garbage rarely does, so a process may run for its whole life
 * with 1 MiB semi-spaces: a scavenge every few hundred requests, each promoting the objects of the requests in
 * flight to the old generation. Measured with the same Fastify route in processes of the same code, that
 * state cost 14–16 µs of CPU per request against 11 µs with this flag; palmid's reads 3–4 µs more. Whether a
 * process ended up in it depended on its history, which is one reason why the same bench gave different CPU
 * per request in two quiet runs. V8 cannot change this after start-up (not from `v8.setFlagsFromString`, not
 * from NODE_OPTIONS, which refuses this flag), so it is a command-line flag.
 */
export const SERVER_NODE_FLAGS = ['--min-semi-space-size=16'] as const;

/** The young generation's semi-space size now, in MiB: below 16 the flags above are missing. */
export function semiSpaceMiB(): number {
  const space = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  return space ? Math.round(space.space_size / (1024 * 1024)) : 0;
}
