/**
 * Processes and their CPU time from /proc (Linux), for the benches that measure servers in other
 * processes. Elsewhere (or once a process is gone) they count nothing.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** The process and its descendants (a target's pid is tsx's launcher; node runs in its child). */
export function processTree(pid: number): number[] {
  const out = [pid];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const children = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      for (const c of children ? children.split(' ') : []) out.push(...processTree(Number(c)));
    }
  } catch {
    // gone meanwhile
  }
  return out;
}

/** CPU time (user + system, all threads) of the processes and their descendants so far, in ms (ticks of 10 ms). */
export function cpuMs(pids: (number | undefined)[]): number {
  let ticks = 0;
  for (const pid of pids.flatMap((p) => (p ? processTree(p) : []))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // after the command name, which may itself hold ") "
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
    } catch {
      // the process is gone: nothing more to count
    }
  }
  return ticks * 10;
}
