import sharp from 'sharp';

export interface DetCurve {
  label: string;
  /** (FAR, FRR) points, as `errorRates().det` gives them: only FARs the set measures. */
  points: Array<{ far: number; frr: number }>;
  genuinePairs: number;
  impostorPairs: number;
  eer?: number | null;
  /** FAR and FRR at the deployed decision threshold (a similarity score). */
  operating?: { threshold: number; far: number; frr: number } | null;
  /**
   * The open-set bar at a gallery size (N = 1e6): the per-comparison FMR there under the tail
   * model strangers are drawn from (usually below what the axis shows: then drawn on the axis's
   * left end with an arrow) and the FRR of the set's genuine pairs at that distance.
   */
  identification?: { gallery: number; distance: number; far: number; frr: number } | null;
}

const W = 680;
const H = 540;
const L = 70;
const T = 30;
const R = 20;
const B = 70;
/** Height of the band under the log axis where FRR = 0 is drawn (a log axis has no 0). */
const ZERO_BAND = 26;
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];
const FONT = 'font-family="sans-serif"';

const pct = (x: number) => `${(x * 100).toPrecision(3)} %`;

/**
 * DET curve (FRR against FAR, log axes) as SVG. The axes cover only what the set measures:
 * FAR down to 1 / impostor pairs and FRR down to 1 / genuine pairs, with FRR = 0 drawn in a band
 * of its own under the axis; a curve that never leaves it says so. The EER (circle) and the
 * deployed threshold's operating point (diamond) are marked.
 */
export function detSvg(curves: DetCurve[], title = 'DET curve'): string {
  const measurable = curves.filter((c) => c.genuinePairs > 0 && c.impostorPairs > 0);
  const maxImp = Math.max(1, ...measurable.map((c) => c.impostorPairs));
  const maxGen = Math.max(1, ...measurable.map((c) => c.genuinePairs));
  // the axes end where the set stops measuring: FAR 1 / impostor pairs, FRR 1 / genuine pairs
  const xMinExp = Math.min(-1, Math.log10(1 / maxImp));
  const yMinExp = Math.min(-1, Math.log10(1 / maxGen));
  const plotBottom = H - B - ZERO_BAND;
  const x = (far: number) =>
    L + ((Math.log10(Math.max(far, 10 ** xMinExp)) - xMinExp) / -xMinExp) * (W - L - R);
  const y = (frr: number) =>
    frr <= 0
      ? plotBottom + ZERO_BAND / 2
      : T + (1 - (Math.log10(Math.max(frr, 10 ** yMinExp)) - yMinExp) / -yMinExp) * (plotBottom - T);
  const parts: string[] = [`<rect width="${W}" height="${H}" fill="white"/>`];
  parts.push(
    `<text x="${(L + W - R) / 2}" y="${T - 10}" font-size="14" text-anchor="middle" ${FONT}>${escapeXml(title)}</text>`,
  );
  const xTicks = ticks(xMinExp, maxImp);
  const yTicks = ticks(yMinExp, maxGen);
  for (const [e, text] of xTicks) {
    parts.push(`<line x1="${x(10 ** e)}" y1="${T}" x2="${x(10 ** e)}" y2="${H - B}" stroke="#ddd"/>`);
    parts.push(
      `<text x="${x(10 ** e)}" y="${H - B + 18}" font-size="12" text-anchor="middle" ${FONT}>${text}</text>`,
    );
  }
  for (const [e, text] of yTicks) {
    parts.push(`<line x1="${L}" y1="${y(10 ** e)}" x2="${W - R}" y2="${y(10 ** e)}" stroke="#ddd"/>`);
    parts.push(
      `<text x="${L - 6}" y="${y(10 ** e) + 4}" font-size="12" text-anchor="end" ${FONT}>${text}</text>`,
    );
  }
  parts.push(
    `<rect x="${L}" y="${plotBottom}" width="${W - L - R}" height="${ZERO_BAND}" fill="#f4f4f4" stroke="#ccc"/>`,
    `<text x="${L - 6}" y="${y(0) + 4}" font-size="12" text-anchor="end" ${FONT}>0</text>`,
    `<text x="${(L + W - R) / 2}" y="${H - B + 38}" font-size="14" text-anchor="middle" ${FONT}>False accept rate (FAR), down to 1 / impostor pairs</text>`,
    `<text x="18" y="${(T + H - B) / 2}" font-size="14" text-anchor="middle" ${FONT} transform="rotate(-90 18 ${(T + H - B) / 2})">False reject rate (FRR)</text>`,
  );
  let line = 0;
  const legend = (text: string, colour: string) => {
    parts.push(
      `<text x="${W - R - 8}" y="${T + 18 + 17 * line++}" font-size="12" text-anchor="end" fill="${colour}" ${FONT}>${escapeXml(text)}</text>`,
    );
  };
  curves.forEach((c, i) => {
    const colour = COLOURS[i % COLOURS.length]!;
    if (c.genuinePairs === 0 || c.impostorPairs === 0 || c.points.length === 0) {
      legend(
        `${c.label}: not measurable (${c.genuinePairs} genuine, ${c.impostorPairs} impostor pairs)`,
        colour,
      );
      return;
    }
    const pts = c.points.map((p) => `${x(p.far).toFixed(1)},${y(p.frr).toFixed(1)}`).join(' ');
    const dash = i > 0 ? ' stroke-dasharray="6 4"' : '';
    parts.push(`<polyline points="${pts}" fill="none" stroke="${colour}" stroke-width="2"${dash}/>`);
    legend(c.eer == null ? c.label : `${c.label}: EER ${pct(c.eer)}`, colour);
    if (c.eer != null) {
      parts.push(
        `<circle cx="${x(c.eer).toFixed(1)}" cy="${y(c.eer).toFixed(1)}" r="5" fill="none" stroke="${colour}" stroke-width="2"/>`,
      );
    }
    if (c.operating) {
      const ox = x(c.operating.far);
      const oy = y(c.operating.frr);
      parts.push(
        `<path d="M${ox} ${oy - 7} L${ox + 7} ${oy} L${ox} ${oy + 7} L${ox - 7} ${oy} Z" fill="${colour}" fill-opacity="0.6"/>`,
      );
      const farText =
        c.operating.far === 0 ? `< ${(1 / c.impostorPairs).toExponential(1)}` : pct(c.operating.far);
      legend(
        `◆ threshold ${c.operating.threshold}: FAR ${farText}, FRR ${c.operating.frr === 0 ? '0' : pct(c.operating.frr)}`,
        colour,
      );
    }
    if (c.identification) {
      const id = c.identification;
      const off = id.far < 10 ** xMinExp;
      const ix = x(id.far);
      const iy = y(id.frr);
      parts.push(
        `<path d="M${ix} ${iy - 8} L${ix + 7} ${iy + 5} L${ix - 7} ${iy + 5} Z" fill="${colour}" fill-opacity="0.8"/>`,
      );
      if (off)
        parts.push(
          `<text x="${ix + 9}" y="${iy + 4}" font-size="11" fill="${colour}" ${FONT}>← FMR ${id.far.toExponential(1)}</text>`,
        );
      legend(
        `▲ N = ${id.gallery.toExponential(0)} bar (distance ${id.distance.toFixed(3)}): FMR ${id.far.toExponential(1)} (tail model${off ? ', off the axis' : ''}), FRR ${id.frr === 0 ? '0' : pct(id.frr)}`,
        colour,
      );
    }
    if (c.points.every((p) => p.frr === 0)) {
      legend(
        `FRR = 0 at every measured FAR (${c.genuinePairs} genuine pairs; 95 % bound ${pct(Math.min(1, 3 / c.genuinePairs))})`,
        colour,
      );
    }
  });
  legend('○ EER', '#444');
  parts.push(
    `<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - B - T}" fill="none" stroke="black"/>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}">${parts.join('')}</svg>`;
}

/**
 * Decade ticks from 10^minExp to 1, labelled 1e-k; the first is 1/n itself (the end of what the set
 * measures), and a decade too close to it to label is left out.
 */
function ticks(minExp: number, n: number): Array<[number, string]> {
  const out: Array<[number, string]> = [[minExp, n > 1 ? `1/${n}` : '1e-1']];
  for (let e = Math.ceil(minExp); e <= 0; e++) if (e - minExp > 0.25) out.push([e, e === 0 ? '1' : `1e${e}`]);
  return out;
}

/** Renders `detSvg` to a PNG file (rasterised by sharp). */
export async function writeDetPlot(path: string, curves: DetCurve[], title?: string): Promise<void> {
  await sharp(Buffer.from(detSvg(curves, title)))
    .png()
    .toFile(path);
}

function escapeXml(s: string): string {
  return s.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);
}
