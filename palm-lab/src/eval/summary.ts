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
  if (r.impostor_model) lines.push(...openSetLines(r));
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

const sci = (x: number) => (x === 0 ? '0' : x >= 0.01 ? pct(x) : x.toExponential(1));

/** The impostor model, its check against the measured tail, and the open-set table. */
function openSetLines(r: EvalReport): string[] {
  const m = r.impostor_model!;
  const out = [
    `impostor model    tail fit p ${m.tail.p}, dof ${m.tail.dof} (log10 FMR off by ${m.tail_rms_decades.tail} decades rms in the measured tail); moments p ${m.moments.p}, dof ${m.moments.dof} (off by ${m.tail_rms_decades.moments})`,
  ];
  const check = m.check.filter((c) => c.fmr_measured <= 0.011);
  if (check.length > 0)
    out.push(
      `model check       FMR measured ${check.map((c) => sci(c.fmr_measured)).join(' / ')} at distance ${check.map((c) => c.distance.toFixed(3)).join(' / ')}`,
      `                  tail model   ${check.map((c) => sci(c.fmr_tail)).join(' / ')}; moments ${check.map((c) => sci(c.fmr_moments)).join(' / ')}`,
    );
  const o = r.open_set_protocol;
  if (!o || !r.open_set) return out;
  out.push(
    `open set          target FPIR ${o.target_fpir}, margin ${o.margin} and step-up window ${o.step_up_window} decades, evidence read with p ${o.model.p}, dof ${o.model.dof} (${o.model_source === 'set fit' ? 'the set’s own tail fit: stricter than the shipped model, what gallery calibration reads' : o.model_source}), strangers beyond the set drawn from p ${o.truth.p}, dof ${o.truth.dof}; ${o.presentations} genuine presentations (${o.with_second_capture} with a step-up capture: ${o.second_capture})`,
    '  gallery  bar (decades)  distance  FPIR (method)         FPIR with step-up  FNIR     FNIR with step-up  step-ups  enrolled as another (with step-up)',
  );
  for (const row of r.open_set)
    out.push(
      `  ${row.gallery.toExponential(0).padEnd(7)}  ${row.threshold.toFixed(2).padStart(13)}  ${row.distance.toFixed(4).padStart(8)}  ${`${sci(row.fpir)} (${row.fpir_method})`.padEnd(20)}  ${sci(row.fpir_step_up).padEnd(17)}  ${pct(row.fnir).padEnd(7)}  ${pct(row.fnir_step_up).padEnd(17)}  ${pct(row.step_up_rate).padEnd(8)}  ${sci(row.enrolled_as_another)} (${sci(row.enrolled_as_another_step_up)})`,
    );
  if (o.recaptured_presentations > 0)
    out.push(
      `re-captures       ${o.recaptured_presentations} of the presentations are images merged in with --same (filed under another label: another session); their FNIR, one capture / with step-up: ${r.open_set
        .map(
          (row) =>
            `${row.gallery.toExponential(0)} ${pct(row.fnir_recaptures ?? 0)} / ${pct(row.fnir_step_up_recaptures ?? 0)}`,
        )
        .join(', ')}`,
    );
  if (r.open_set_fusion)
    for (const f of r.open_set_fusion)
      out.push(
        `fusion            ${f.enrol} template(s) per palm, ${f.frames} frame(s): at distance ${f.at_distance} FMR ${sci(f.fmr_at)}, FNMR ${pct(f.fnmr_at)}; at N = 1e6 FPIR ${sci(f.fpir)} (${sci(f.fpir_step_up)} with step-up), FNIR ${pct(f.fnir)}, with step-up ${pct(f.fnir_step_up)}, ${pct(f.step_up_rate)} asked (${f.presentations} presentations)`,
      );
  return out;
}
