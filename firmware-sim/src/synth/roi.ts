import { type CanonicalHand, rasterise, sampleLayer } from './canonical.ts';
import { handModel } from './hand-model.ts';
import { createRng, gaussian, uniform } from './rng.ts';

/**
 * Already-cropped palm ROIs in the style of public databases, for `palm eval --roi`:
 * `contact` (flatbed scanner, pegs: small pose change, crisp lines), `contactless` (free hand:
 * larger shifts, rotation, scale, uneven light, blur, noise), `vein` (NIR palm-vein: blurred
 * veins with faint creases, low contrast). `session` 2 adds more pose and light change.
 */
export type RoiStyle = 'contact' | 'contactless' | 'vein';

export interface RoiSpec {
  identity: string;
  style: RoiStyle;
  session: 1 | 2;
  sample: number;
  size?: number;
}

const cache = new Map<string, CanonicalHand>();

export function renderRoi(spec: RoiSpec): { width: number; height: number; data: Uint8Array } {
  const size = spec.size ?? 128;
  let hand = cache.get(spec.identity);
  if (!hand) {
    hand = rasterise(handModel(spec.identity, 'right'));
    cache.set(spec.identity, hand);
    if (cache.size > 64) cache.delete(cache.keys().next().value!);
  }
  const rng = createRng(`roi:${spec.identity}:${spec.style}:${spec.session}:${spec.sample}`);
  const loose = spec.style === 'contact' ? 1 : 2.2;
  const sessionFactor = spec.session === 2 ? 1.5 : 1;
  const shift = 0.008 * loose * sessionFactor;
  const angle = gaussian(rng) * 0.02 * loose * sessionFactor;
  const scale = 1 + gaussian(rng) * 0.012 * loose * sessionFactor;
  const tx = gaussian(rng) * shift;
  const ty = gaussian(rng) * shift;
  const half = 0.4; // the ROI spans 0.8 hand units around the palm centre
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  const light = {
    gain: uniform(rng, 0.7, 1.2),
    gx: gaussian(rng) * 0.25 * (loose - 0.5),
    gy: gaussian(rng) * 0.25 * (loose - 0.5),
    gamma: uniform(rng, 0.8, 1.25),
  };
  const warp = Array.from({ length: 3 }, () => ({
    fx: uniform(rng, -6, 6),
    fy: uniform(rng, -6, 6),
    p: uniform(rng, 0, 6.28),
    a: gaussian(rng) * 0.004 * loose,
  }));
  const raw = new Float32Array(size * size);
  for (let r = 0; r < size; r++) {
    for (let c = 0; c < size; c++) {
      const u = ((c + 0.5) / size - 0.5) * 2 * half * scale;
      const v = ((r + 0.5) / size - 0.5) * 2 * half * scale;
      let x = cos * u - sin * v + tx;
      let y = sin * u + cos * v + ty;
      for (const w of warp) {
        const s = Math.sin(w.fx * x + w.fy * y + w.p);
        x += w.a * s;
        y += w.a * Math.cos(w.fx * y - w.fy * x + w.p);
      }
      const skin = sampleLayer(hand, hand.skin, x, y);
      const veins = sampleLayer(hand, hand.veins, x, y);
      const value =
        spec.style === 'vein' ? (0.75 + 0.25 * skin) * (1 - 1.6 * veins) : skin * (1 - 0.15 * veins);
      const lit = light.gain * (1 + light.gx * (c / size - 0.5) + light.gy * (r / size - 0.5));
      raw[r * size + c] = Math.max(0, 0.7 * value * lit);
    }
  }
  const blurSigma =
    (spec.style === 'vein'
      ? uniform(rng, 2.2, 3.2)
      : spec.style === 'contact'
        ? 0.5
        : uniform(rng, 0.7, 1.4)) *
    (size / 128);
  const blurred = blur(raw, size, blurSigma);
  const noise = spec.style === 'contact' ? 1.5 : uniform(rng, 2, 5);
  const out = new Uint8Array(size * size);
  for (let i = 0; i < out.length; i++) {
    const g = 255 * Math.min(1, blurred[i]!) ** light.gamma + gaussian(rng) * noise;
    out[i] = Math.max(0, Math.min(255, Math.round(g)));
  }
  return { width: size, height: size, data: out };
}

function blur(src: Float32Array, n: number, sigma: number): Float32Array {
  const radius = Math.max(1, Math.ceil(sigma * 3));
  const k = new Float32Array(2 * radius + 1);
  let sum = 0;
  for (let i = -radius; i <= radius; i++) {
    k[i + radius] = Math.exp((-i * i) / (2 * sigma * sigma));
    sum += k[i + radius]!;
  }
  for (let i = 0; i < k.length; i++) k[i] = k[i]! / sum;
  const tmp = new Float32Array(n * n);
  const out = new Float32Array(n * n);
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      let s = 0;
      for (let i = -radius; i <= radius; i++)
        s += k[i + radius]! * src[r * n + Math.max(0, Math.min(n - 1, c + i))]!;
      tmp[r * n + c] = s;
    }
  }
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      let s = 0;
      for (let i = -radius; i <= radius; i++)
        s += k[i + radius]! * tmp[Math.max(0, Math.min(n - 1, r + i)) * n + c]!;
      out[r * n + c] = s;
    }
  }
  return out;
}
