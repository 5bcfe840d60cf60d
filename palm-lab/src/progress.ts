import { SingleBar } from 'cli-progress';

/**
 * A progress bar on stderr (stdout stays for results). On a terminal it redraws in place; when
 * stderr is a pipe or a log file it prints a plain line at the start, every 2 s and at the end,
 * so long work is never silent.
 */
export function progressBar(total: number, label: string): SingleBar {
  const bar = new SingleBar({
    stream: process.stderr,
    format: `${label} {bar} {value}/{total} ({percentage} %) ETA {eta_formatted}`,
    clearOnComplete: process.stderr.isTTY === true,
    noTTYOutput: true,
    notTTYSchedule: 2000,
    hideCursor: false,
  });
  bar.start(total, 0);
  return bar;
}
