import type { GrayImage } from './image-io.ts';

/**
 * Hand localisation in a whole NIR frame: Otsu foreground, chamfer distance transform (the palm
 * is the largest inscribed circle), then a circular scan around the palm that crosses the
 * fingers, thumb and wrist; the valleys between the fingers fix rotation, the palm radius fixes
 * scale, and the thumb side tells left from right.
 */
export interface HandGeometry {
  threshold: number;
  /** share of the frame covered by the hand */
  coverage: number;
  mask: Uint8Array;
  /** chamfer distance to the background, in px ×3 */
  distance: Uint16Array;
  cx: number;
  cy: number;
  radius: number;
  /** angle (rad, image coordinates) of the direction from the palm towards the fingers */
  up: number | null;
  hand: 'left' | 'right' | null;
  fingers: number;
  touchesEdge: boolean;
  /** finger valleys (between index/middle, middle/ring, ring/little) when found, frame px */
  valleys?: Array<{ x: number; y: number }>;
  /** ROI square (centre, side, fingers-up angle) when the geometry fixes it */
  roi?: { cx: number; cy: number; side: number; up: number };
}

export function otsu(data: Uint8Array): number {
  const hist = new Float64Array(256);
  for (let i = 0; i < data.length; i++) hist[data[i]!] = hist[data[i]!]! + 1;
  let sum = 0;
  for (let i = 0; i < 256; i++) sum += i * hist[i]!;
  let sumB = 0;
  let wB = 0;
  let best = 0;
  let threshold = 128;
  for (let t = 0; t < 256; t++) {
    wB += hist[t]!;
    if (wB === 0) continue;
    const wF = data.length - wB;
    if (wF === 0) break;
    sumB += t * hist[t]!;
    const mB = sumB / wB;
    const mF = (sum - sumB) / wF;
    const between = wB * wF * (mB - mF) * (mB - mF);
    if (between > best) {
      best = between;
      threshold = t;
    }
  }
  return threshold;
}

function chamfer(mask: Uint8Array, w: number, h: number): Uint16Array {
  const d = new Uint16Array(w * h);
  const INF = 65000;
  for (let i = 0; i < d.length; i++) d[i] = mask[i] ? INF : 0;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = y * w + x;
      if (!d[i]) continue;
      let v = d[i]!;
      if (x === 0 || y === 0 || x === w - 1 || y === h - 1) v = Math.min(v, 3);
      if (x > 0) v = Math.min(v, d[i - 1]! + 3);
      if (y > 0) {
        v = Math.min(v, d[i - w]! + 3);
        if (x > 0) v = Math.min(v, d[i - w - 1]! + 4);
        if (x < w - 1) v = Math.min(v, d[i - w + 1]! + 4);
      }
      d[i] = v;
    }
  }
  for (let y = h - 1; y >= 0; y--) {
    for (let x = w - 1; x >= 0; x--) {
      const i = y * w + x;
      if (!d[i]) continue;
      let v = d[i]!;
      if (x < w - 1) v = Math.min(v, d[i + 1]! + 3);
      if (y < h - 1) {
        v = Math.min(v, d[i + w]! + 3);
        if (x < w - 1) v = Math.min(v, d[i + w + 1]! + 4);
        if (x > 0) v = Math.min(v, d[i + w - 1]! + 4);
      }
      d[i] = v;
    }
  }
  return d;
}

export function locateHand(frame: GrayImage): HandGeometry {
  const { width: w, height: h, data } = frame;
  const threshold = Math.max(otsu(data), 20);
  const mask = new Uint8Array(w * h);
  let fg = 0;
  for (let i = 0; i < data.length; i++) {
    if (data[i]! > threshold) {
      mask[i] = 1;
      fg++;
    }
  }
  const distance = chamfer(mask, w, h);
  let best = 0;
  let bi = 0;
  for (let i = 0; i < distance.length; i++) {
    if (distance[i]! > best) {
      best = distance[i]!;
      bi = i;
    }
  }
  const cx = bi % w;
  const cy = Math.floor(bi / w);
  const radius = best / 3;
  const geometry: HandGeometry = {
    threshold,
    coverage: fg / (w * h),
    mask,
    distance,
    cx,
    cy,
    radius,
    up: null,
    hand: null,
    fingers: 0,
    touchesEdge: false,
  };
  if (radius < 4) return geometry;
  // circular scan through the fingers (and, usually, the thumb)
  const N = 360;
  const narrow = ringRuns(mask, w, h, cx, cy, radius * 1.65, N);
  geometry.fingers = narrow.length;
  const centre = (r: { from: number; len: number }) => (2 * Math.PI * (r.from + r.len / 2)) / N;
  if (narrow.length < 4 || narrow.length > 6) return geometry;
  // the four fingers are the tightest group of four consecutive narrow runs; the thumb stands apart
  const angles = narrow.map(centre).sort((a, b) => a - b);
  let bestSpan = Number.POSITIVE_INFINITY;
  let group: number[] = [];
  for (let s = 0; s < angles.length; s++) {
    const g = [0, 1, 2, 3].map((k) => angles[(s + k) % angles.length]!);
    let span = g[3]! - g[0]!;
    if (span < 0) span += 2 * Math.PI;
    if (span < bestSpan) {
      bestSpan = span;
      group = g;
    }
  }
  // valleys: the gaps between index/middle and ring/little (angle midway between neighbours)
  const mid = (a: number, b: number) => {
    let d = b - a;
    if (d < 0) d += 2 * Math.PI;
    return a + d / 2;
  };
  const v1 = mid(group[0]!, group[1]!);
  const v3 = mid(group[2]!, group[3]!);
  const p1 = { x: Math.cos(v1), y: Math.sin(v1) };
  const p3 = { x: Math.cos(v3), y: Math.sin(v3) };
  let up = Math.atan2(p1.y + p3.y, p1.x + p3.x);
  // refine with the perpendicular of the valley line, which does not depend on finger spread
  const perp = Math.atan2(p3.y - p1.y, p3.x - p1.x) - Math.PI / 2;
  const diff = Math.atan2(Math.sin(perp - up), Math.cos(perp - up));
  if (Math.abs(diff) < 0.6) up += diff / 2;
  else if (Math.abs(Math.abs(diff) - Math.PI) < 0.6) up += (diff > 0 ? diff - Math.PI : diff + Math.PI) / 2;
  geometry.up = up;
  const groupSet = new Set(group);
  let thumb = narrow.length >= 5 ? angles.find((a) => !groupSet.has(a)) : undefined;
  if (thumb === undefined) {
    // a short thumb may cross only a tighter or a wider ring: look there for a run well away
    // from the four fingers (the geometry above still comes from the main ring)
    const far = (a: number) =>
      group.every((f) => Math.abs(Math.atan2(Math.sin(a - f), Math.cos(a - f))) > 0.45);
    for (const k of [1.45, 1.9]) {
      thumb = ringRuns(mask, w, h, cx, cy, radius * k, N)
        .map(centre)
        .find(far);
      if (thumb !== undefined) break;
    }
  }
  if (thumb !== undefined) {
    // thumb on the right of "up" (clockwise in image coordinates, y down) → right hand
    const rel = Math.atan2(Math.sin(thumb - up), Math.cos(thumb - up));
    if (Math.abs(rel) > 0.5 && Math.abs(rel) < 2.4) geometry.hand = rel > 0 ? 'right' : 'left';
  }
  // hand cut by the frame (the wrist side is expected to leave the frame)
  const reach = radius * 1.35;
  geometry.touchesEdge = cx - reach < 0 || cx + reach >= w || cy - reach * 1.6 < 0;
  return geometry;
}

/** Narrow foreground runs (fingers, thumb) on a circle; the widest run (the wrist) is dropped. */
function ringRuns(mask: Uint8Array, w: number, h: number, cx: number, cy: number, R: number, N: number) {
  const ring = new Uint8Array(N);
  for (let k = 0; k < N; k++) {
    const a = (2 * Math.PI * k) / N;
    const x = Math.round(cx + R * Math.cos(a));
    const y = Math.round(cy + R * Math.sin(a));
    ring[k] = x >= 0 && y >= 0 && x < w && y < h ? mask[y * w + x]! : 0;
  }
  const start = ring.indexOf(0);
  if (start < 0) return [];
  const runs: Array<{ from: number; len: number }> = [];
  for (let k = 0; k < N; k++) {
    const idx = (start + k) % N;
    if (ring[idx]) {
      const last = runs[runs.length - 1];
      if (last && (last.from + last.len) % N === idx) last.len++;
      else runs.push({ from: idx, len: 1 });
    }
  }
  const widest = runs.reduce((m, r) => (r.len > m.len ? r : m), runs[0] ?? { from: 0, len: 0 });
  return runs.filter((r) => r !== widest && r.len >= 3 && r.len <= 40);
}
