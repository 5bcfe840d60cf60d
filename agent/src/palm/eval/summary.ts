import type { EvalReport } from './evaluate.ts';

const pct = (x: number) => `${(x * 100).toFixed(x !== 0 && x < 0.001 ? 4 : 2)} %`;
const ci = (c: [number, number] | null) => (c ? `  (95 % CI ${pct(c[0])} – ${pct(c[1])})` : '');

/** FRR at a FAR target, or why the set cannot measure it. */
function frrLine(target: number, frr: number | null, c: [number, number] | null, r: EvalReport): string {
  const name = `FRR at FAR ${target.toExponential(0)}`.padEnd(18);
  if (frr === null) return `${name}not measurable (no genuine or no impostor pairs)`;
  if (r.impostor_pairs * target < 1)
    return `${name}not measured: ${r.impostor_pairs} impostor pairs resolve FAR down to ${r.min_far?.toExponential(1)} only (FRR ${pct(frr)} at FAR 0)`;
  return `${name}${pct(frr)}${ci(c)}`;
}

/** The reasons images gave no template, most frequent first. */
export function worstReasons(reasons: Record<string, number>, n = 3): string {
  const sorted = Object.entries(reasons).sort((a, b) => b[1] - a[1]);
  const shown = sorted.slice(0, n).map(([reason, count]) => `${reason} ${count}`);
  if (sorted.length > n) shown.push(`${sorted.length - n} other reason(s)`);
  return shown.join(', ');
}

/** The human-readable report `palm eval` prints unless `--json` is given. */
export function formatSummary(
  title: string,
  r: EvalReport,
  baseline?: { name: string; report: EvalReport },
): string {
  const lines = [title];
  lines.push(
    `images            ${r.images} (${r.subjects} subjects), ${r.enrolled} enrolled${
      r.unknown_side ? ` (${r.unknown_side} of undecided hand side, compared with every image)` : ''
    }`,
    `failure to enrol  ${pct(r.fta)} (${r.images - r.enrolled} image(s))${
      r.images > r.enrolled ? `: ${worstReasons(r.failure_reasons)}` : ''
    }`,
    `pairs             ${r.genuine_pairs} genuine, ${r.impostor_pairs} impostor`,
  );
  if (r.eer === null) {
    lines.push(
      `EER               not measurable: too few images enrolled for ${
        r.genuine_pairs === 0 ? 'a genuine pair' : 'an impostor pair'
      }`,
    );
  } else {
    lines.push(`EER               ${pct(r.eer)}${ci(r.eer_ci95)}`);
    lines.push(frrLine(1e-3, r.frr_at_far_1e3, r.frr_at_far_1e3_ci95, r));
    lines.push(frrLine(1e-4, r.frr_at_far_1e4, r.frr_at_far_1e4_ci95, r));
    if (r.operating_point) {
      const o = r.operating_point;
      lines.push(
        `at threshold ${o.threshold}  FAR ${o.far === 0 ? `0 (< ${r.min_far?.toExponential(1)})` : pct(o.far)}, FRR ${pct(o.frr)}`,
      );
    }
  }
  const match = r.genuine_pairs + r.impostor_pairs > 0 ? `, match ${r.match_us_p50} µs per pair` : '';
  lines.push(`timing            extraction ${r.extract_ms_p50} ms p50 (CPU)${match}`);
  if (baseline) {
    const b = baseline.report;
    lines.push(
      `${baseline.name.padEnd(18)}EER ${b.eer === null ? 'not measurable' : pct(b.eer)}${ci(b.eer_ci95)}, FRR at FAR 1e-4 ${
        b.frr_at_far_1e4 === null ? '-' : pct(b.frr_at_far_1e4)
      }, failure to enrol ${pct(b.fta)}`,
    );
    if (r.eer !== null && b.eer !== null)
      lines.push(
        r.eer === 0
          ? `ratio             not defined: palmid's EER is 0 (the baseline's ${pct(b.eer)}); use a harder or larger set`
          : `ratio             baseline EER / palmid EER = ${(b.eer / r.eer).toFixed(2)}`,
      );
  }
  return `${lines.join('\n')}\n`;
}
