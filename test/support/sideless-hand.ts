import { type GrayFrame, renderPalm, type Sensor } from '@palmid/firmware-sim/synth/index';
import { locateHand } from '@palmid/palm/capture/hand-geometry';
import { SENSOR_PROFILES } from '@palmid/palm/capture/sensor-profiles';

/**
 * A hand with no left/right cue: a rendered right hand resampled so that its half away from the
 * thumb (little and ring fingers, hypothenar edge) is mirrored onto the other half about the
 * finger axis through the middle finger valley. No thumb, no thumb web, fingers of equal widths:
 * the geometry finds three valleys and no side, as on real frames where the thumb is out of view.
 */
async function mirroredHalf(sensor: Sensor, capture: number): Promise<GrayFrame | null> {
  const frame = await renderPalm({
    identity: 'pipe-sideless',
    hand: 'right',
    capture,
    sensor,
    ...(sensor === 'simulator' ? {} : { width: 320, height: 240 }),
  });
  const g = locateHand(frame, SENSOR_PROFILES[sensor].stages.roi.proportions);
  if (!g.valleys || g.up === null) return null; // this render's own valleys are not found: next capture
  const { x: ox, y: oy } = g.valleys[1]!;
  const ux = Math.cos(g.up);
  const uy = Math.sin(g.up);
  const { width: w, height: h, data } = frame;
  const out = new Uint8Array(w * h).fill(data[0]!);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      // fingers towards −x; the right hand's thumb lies at across > 0, so the other half is kept
      const along = ox - x;
      const across = -Math.abs(y - oy);
      const sx = ox + along * ux - across * uy;
      const sy = oy + along * uy + across * ux;
      const x0 = Math.floor(sx);
      const y0 = Math.floor(sy);
      if (x0 < 0 || y0 < 0 || x0 >= w - 1 || y0 >= h - 1) continue;
      const fx = sx - x0;
      const fy = sy - y0;
      const i = y0 * w + x0;
      out[y * w + x] = Math.round(
        (1 - fx) * (1 - fy) * data[i]! +
          fx * (1 - fy) * data[i + 1]! +
          (1 - fx) * fy * data[i + w]! +
          fx * fy * data[i + w + 1]!,
      );
    }
  return { width: w, height: h, data: out };
}

const found = new Map<Sensor, { next: number; frames: GrayFrame[] }>();

/**
 * The `n`-th (from 0) such frame of `sensor` whose geometry indeed finds valleys, a square inside
 * the frame and no side (captures 0–39 are tried in order; on some the outline keeps a cue, and
 * renders whose own valleys are not found are passed over).
 */
export async function sideless(sensor: Sensor, n = 0): Promise<GrayFrame> {
  let state = found.get(sensor);
  if (!state) {
    state = { next: 0, frames: [] };
    found.set(sensor, state);
  }
  while (state.frames.length <= n) {
    if (state.next > 39) throw new Error(`fewer than ${n + 1} ${sensor} frames without a side cue`);
    const frame = await mirroredHalf(sensor, state.next++);
    if (!frame) continue;
    const g = locateHand(frame, SENSOR_PROFILES[sensor].stages.roi.proportions);
    if (g.up !== null && g.hand === null && !g.touchesEdge) state.frames.push(frame);
  }
  return state.frames[n]!;
}
