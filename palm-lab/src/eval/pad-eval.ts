import { type Attack, renderPalm } from '@palmid/firmware-sim/synth/index';
import { measureFrame } from '@palmid/palm/capture/capture-checks';
import { locateHand } from '@palmid/palm/capture/hand-geometry';
import { LIVENESS_THRESHOLD, livenessScore } from '@palmid/palm/capture/liveness';
import { processCapture } from '@palmid/palm/capture/pipeline';

const ATTACKS: Attack[] = ['print', 'screen'];

/** One point of the DET curve: the threshold that keeps BPCER at or below `bpcer_target`. */
export interface PadOperatingPoint {
  bpcer_target: number;
  threshold: number;
  bpcer: number;
  apcer: Record<Attack, number>;
}

/**
 * Presentation-attack detection report in ISO/IEC 30107-3 terms over synthetic captures:
 * BPCER = bona fide presentations classified as attacks, APCER = attack presentations classified
 * as bona fide, per attack type (the worst type counts). "pad" rates use the liveness score
 * alone; "system" rates are end to end through `processCapture` (an attack refused by a quality
 * check is not accepted either; a bona fide capture refused by one is a failure to acquire).
 */
export interface PadReport {
  /** identity name prefix and the first identity index: the data set */
  seed: string;
  offset: number;
  bona_fide: number;
  attacks: Record<Attack, number>;
  threshold: number;
  bpcer: number;
  apcer: Record<Attack, number>;
  apcer_max: number;
  /** thresholds chosen on these data for BPCER ≤ 1 %, 2 % and 5 %, and the APCER there */
  det: PadOperatingPoint[];
  system: { bpcer: number; apcer: Record<Attack, number>; bona_fide_fta: number };
}

export interface PadOptions {
  /** identity name prefix (another prefix is another, independent data set) */
  seed?: string;
  /** index of the first identity */
  offset?: number;
  onProgress?: (done: number, total: number) => void;
}

export async function evaluatePad(identities: number, opts: PadOptions = {}): Promise<PadReport> {
  const seed = opts.seed ?? 'pad';
  const offset = opts.offset ?? 0;
  const live: number[] = [];
  const atk: Record<Attack, number[]> = { print: [], screen: [] };
  let sysLiveRejectedAsAttack = 0;
  let sysLiveFta = 0;
  const sysAccepted: Record<Attack, number> = { print: 0, screen: 0 };
  let done = 0;
  const total = identities * 3;
  for (let i = offset; i < offset + identities; i++) {
    for (const attack of [undefined, ...ATTACKS]) {
      const spec = {
        identity: `${seed}${i}`,
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
      opts.onProgress?.(++done, total);
    }
  }
  const rate = (xs: number[], pred: (x: number) => boolean) =>
    xs.filter(pred).length / Math.max(1, xs.length);
  const apcerAt = (t: number) => ({
    print: rate(atk.print, (s) => s >= t),
    screen: rate(atk.screen, (s) => s >= t),
  });
  const sorted = [...live].sort((a, b) => a - b);
  // the highest threshold t with at most `target` of the bona fide scores below it
  const det = [0.01, 0.02, 0.05].map((target): PadOperatingPoint => {
    const t = sorted[Math.floor(target * sorted.length)] ?? LIVENESS_THRESHOLD;
    return { bpcer_target: target, threshold: t, bpcer: rate(live, (s) => s < t), apcer: apcerAt(t) };
  });
  const apcer = apcerAt(LIVENESS_THRESHOLD);
  return {
    seed,
    offset,
    bona_fide: live.length,
    attacks: { print: atk.print.length, screen: atk.screen.length },
    threshold: LIVENESS_THRESHOLD,
    bpcer: rate(live, (s) => s < LIVENESS_THRESHOLD),
    apcer,
    apcer_max: Math.max(apcer.print, apcer.screen),
    det,
    system: {
      bpcer: sysLiveRejectedAsAttack / Math.max(1, live.length),
      apcer: { print: sysAccepted.print / identities, screen: sysAccepted.screen / identities },
      bona_fide_fta: sysLiveFta / Math.max(1, live.length),
    },
  };
}
