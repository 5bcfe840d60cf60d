import { type Attack, renderPalm } from '@palmid/firmware-sim/synth/index.ts';
import { measureFrame } from './capture-checks.ts';
import { locateHand } from './hand-geometry.ts';
import { LIVENESS_THRESHOLD, livenessScore, processCapture } from './pipeline.ts';

/**
 * Presentation-attack detection report in ISO/IEC 30107-3 terms over synthetic captures:
 * BPCER = bona fide presentations classified as attacks, APCER = attack presentations classified
 * as bona fide (worst attack type counts). "pad" rates use the liveness score alone; "system"
 * rates are end to end (an attack rejected by a quality check is not accepted either).
 */
export interface PadReport {
  bona_fide: number;
  attacks: Record<Attack, number>;
  threshold: number;
  bpcer: number;
  apcer: Record<Attack, number>;
  apcer_max: number;
  /** threshold chosen on these data so that BPCER ≤ 2 %, and the APCER there */
  threshold_at_bpcer_2pct: number;
  apcer_at_bpcer_2pct: number;
  system: { bpcer: number; apcer: Record<Attack, number>; bona_fide_fta: number };
}

export async function evaluatePad(
  identities: number,
  prefix = 'pad',
  onProgress?: (done: number, total: number) => void,
): Promise<PadReport> {
  const attacks: Attack[] = ['print', 'screen'];
  const live: number[] = [];
  const atk: Record<Attack, number[]> = { print: [], screen: [] };
  let sysLiveRejectedAsAttack = 0;
  let sysLiveFta = 0;
  const sysAccepted: Record<Attack, number> = { print: 0, screen: 0 };
  let done = 0;
  const total = identities * 3;
  for (let i = 0; i < identities; i++) {
    for (const attack of [undefined, ...attacks]) {
      const spec = {
        identity: `${prefix}${i}`,
        hand: i % 2 ? ('left' as const) : ('right' as const),
        capture: i,
      };
      const frame = await renderPalm(attack ? { ...spec, attack } : spec);
      const g = locateHand(frame);
      const score = g.radius > 6 ? livenessScore(measureFrame(frame, g)) : 0;
      const result = await processCapture(frame);
      if (attack) {
        atk[attack].push(score);
        if (result.ok) sysAccepted[attack]++;
      } else {
        live.push(score);
        if (!result.ok && result.reason === 'liveness_failed') sysLiveRejectedAsAttack++;
        else if (!result.ok) sysLiveFta++;
      }
      onProgress?.(++done, total);
    }
  }
  const rate = (xs: number[], pred: (x: number) => boolean) =>
    xs.filter(pred).length / Math.max(1, xs.length);
  const apcerAt = (t: number) => Math.max(...attacks.map((a) => rate(atk[a], (s) => s >= t)));
  const sorted = [...live].sort((a, b) => a - b);
  const t2 = sorted[Math.floor(0.02 * sorted.length)] ?? LIVENESS_THRESHOLD;
  const apcer = {
    print: rate(atk.print, (s) => s >= LIVENESS_THRESHOLD),
    screen: rate(atk.screen, (s) => s >= LIVENESS_THRESHOLD),
  };
  return {
    bona_fide: live.length,
    attacks: { print: atk.print.length, screen: atk.screen.length },
    threshold: LIVENESS_THRESHOLD,
    bpcer: rate(live, (s) => s < LIVENESS_THRESHOLD),
    apcer,
    apcer_max: Math.max(apcer.print, apcer.screen),
    threshold_at_bpcer_2pct: t2,
    apcer_at_bpcer_2pct: apcerAt(t2),
    system: {
      bpcer: sysLiveRejectedAsAttack / Math.max(1, live.length),
      apcer: { print: sysAccepted.print / identities, screen: sysAccepted.screen / identities },
      bona_fide_fta: sysLiveFta / Math.max(1, live.length),
    },
  };
}
