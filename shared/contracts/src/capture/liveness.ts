/**
 * The liveness contract between the agent and the server (docs/palm-pipeline.md, "Liveness"). The agent's
 * detector scores 0–100; on the wire (`/ws/pvs` identify and enroll, `POST /api/v1/auth`) liveness is a
 * fraction 0–1. `livenessToWire` is the one conversion; a capture passes at or above the threshold on
 * either scale, and the two thresholds are the same point.
 */

/** Pass threshold on the agent's 0–100 scale. */
export const LIVENESS_PASS_SCORE = 50;

/** Pass threshold on the wire's 0–1 scale. */
export const LIVENESS_PASS = LIVENESS_PASS_SCORE / 100;

/** The agent's 0–100 score as sent on the wire (0–1, clamped). */
export function livenessToWire(score: number): number {
  return Math.max(0, Math.min(1, score / 100));
}

/** True when a wire-scale liveness value passes. */
export function passesLiveness(wire: number): boolean {
  return wire >= LIVENESS_PASS;
}
