import sharp from 'sharp';

/** DET curve (FRR vs FAR, both on log axes) rendered as SVG and rasterised to PNG by sharp. */
export async function writeDetPlot(
  path: string,
  curves: Array<{ label: string; points: Array<{ far: number; frr: number }>; eer?: number }>,
): Promise<void> {
  const W = 640;
  const H = 520;
  const L = 70;
  const T = 30;
  const R = 20;
  const B = 60;
  const minExp = -6;
  const x = (far: number) => L + ((Math.log10(Math.max(far, 1e-6)) - minExp) / -minExp) * (W - L - R);
  const y = (frr: number) => T + (1 - (Math.log10(Math.max(frr, 1e-4)) + 4) / 4) * (H - T - B);
  const parts: string[] = [];
  parts.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  for (let e = minExp; e <= 0; e++) {
    parts.push(`<line x1="${x(10 ** e)}" y1="${T}" x2="${x(10 ** e)}" y2="${H - B}" stroke="#ddd"/>`);
    parts.push(
      `<text x="${x(10 ** e)}" y="${H - B + 18}" font-size="12" text-anchor="middle" font-family="sans-serif">1e${e}</text>`,
    );
  }
  for (let e = -4; e <= 0; e++) {
    parts.push(`<line x1="${L}" y1="${y(10 ** e)}" x2="${W - R}" y2="${y(10 ** e)}" stroke="#ddd"/>`);
    parts.push(
      `<text x="${L - 6}" y="${y(10 ** e) + 4}" font-size="12" text-anchor="end" font-family="sans-serif">1e${e}</text>`,
    );
  }
  parts.push(
    `<text x="${(L + W - R) / 2}" y="${H - 15}" font-size="14" text-anchor="middle" font-family="sans-serif">False accept rate (FAR)</text>`,
  );
  parts.push(
    `<text x="18" y="${(T + H - B) / 2}" font-size="14" text-anchor="middle" font-family="sans-serif" transform="rotate(-90 18 ${(T + H - B) / 2})">False reject rate (FRR)</text>`,
  );
  const colours = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];
  curves.forEach((c, i) => {
    const pts = c.points.map((p) => `${x(p.far).toFixed(1)},${y(p.frr).toFixed(1)}`).join(' ');
    const colour = colours[i % colours.length]!;
    parts.push(`<polyline points="${pts}" fill="none" stroke="${colour}" stroke-width="2"/>`);
    const label = c.eer === undefined ? c.label : `${c.label} (EER ${(c.eer * 100).toFixed(3)} %)`;
    parts.push(
      `<text x="${W - R - 8}" y="${T + 18 + 18 * i}" font-size="13" text-anchor="end" fill="${colour}" font-family="sans-serif">${escapeXml(label)}</text>`,
    );
  });
  parts.push(
    `<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="black"/>`,
  );
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}">${parts.join('')}</svg>`;
  await sharp(Buffer.from(svg)).png().toFile(path);
}

function escapeXml(s: string): string {
  return s.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);
}
