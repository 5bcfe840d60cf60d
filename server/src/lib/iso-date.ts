/**
 * A `new Date(ms).toISOString()` that remembers its last answer: under load many answers (or the
 * creates of one group commit) share one millisecond, and formatting a date costs more than the rest
 * of an envelope or a record (docs/performance.md). Each call gives its own one-slot memory.
 */
export function lastIso(): (ms: number) => string {
  let last = Number.NaN;
  let text = '';
  return (ms) => {
    if (ms !== last) {
      text = new Date(ms).toISOString();
      last = ms;
    }
    return text;
  };
}
