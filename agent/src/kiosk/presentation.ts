import type { CaptureResult } from '@palmid/palm/capture/pipeline';

type Live = Extract<CaptureResult, { ok: true }>;

export type Verdict =
  | { kind: 'again' }
  | { kind: 'attack' }
  | { kind: 'identify'; best: Live /** the weakest liveness of the frames (0–100) */; liveness: number };

/**
 * Multi-frame presentation-attack decision for one context: identify after `liveFrames` live
 * captures (an attack has to pass the detector on each), report an attack after `strikes`
 * liveness refusals. Quality refusals only ask for another capture. Pure, so the kiosk daemon
 * and the policy measurement (`palm-lab/scripts/kiosk-policy.ts`) run the very same rule.
 */
export class PresentationPolicy {
  readonly #live: Live[] = [];
  #strikes = 0;

  constructor(
    readonly liveFrames: number,
    readonly strikes: number,
  ) {}

  /** Whether one more live frame would still leave the policy short of `liveFrames`. */
  get needsMoreAfterLive(): boolean {
    return this.#live.length + 1 < this.liveFrames;
  }

  observe(p: CaptureResult): Verdict {
    if (!p.ok) {
      if (p.reason === 'liveness_failed' && ++this.#strikes >= this.strikes) return { kind: 'attack' };
      return { kind: 'again' };
    }
    this.#live.push(p);
    if (this.#live.length < this.liveFrames) return { kind: 'again' };
    const best = this.#live.reduce((a, b) => (b.quality > a.quality ? b : a));
    return { kind: 'identify', best, liveness: Math.min(...this.#live.map((l) => l.liveness)) };
  }
}
