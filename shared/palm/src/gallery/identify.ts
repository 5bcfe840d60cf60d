import {
  type Candidate,
  DEFAULT_POLICY,
  decideIdentification,
  decisionBar,
  evidenceAt,
  type IdentificationDecision,
  type IdentificationPolicy,
} from '../decision.ts';
import { MATCH_THRESHOLD } from '../threshold.ts';
import type { Gallery, GallerySearch, Hand, IdentificationRule, IdentifyHit } from './types.ts';

/**
 * The gallery-wide identification (CONTRACT §10, docs/palm-pipeline.md "Identification at
 * scale"): every search's closest different users go through the shared decision
 * (@palmid/palm/decision) with the number of palms actually searched as the gallery
 * size, so that a stranger is matched to somebody with probability at most PALMID_TARGET_FPIR
 * whatever the gallery's size, the step-up's second decision included (each decision point is
 * taken at half the target: decision.ts `decisionBar`).
 */

/** Users each capture's search returns: the best two decide, a few more let a step-up fuse. */
export const SEARCH_USERS = 8;

/** A raw distance for a similarity score (score = 1 − 2d). */
export function scoreToDistance(score: number): number {
  return (1 - score) / 2;
}

export function identificationRule(
  options: { threshold?: number | undefined; policy?: Partial<IdentificationPolicy> | undefined } = {},
): IdentificationRule {
  return {
    policy: { ...DEFAULT_POLICY, ...(options.policy ?? {}) },
    maxDistance: scoreToDistance(options.threshold ?? MATCH_THRESHOLD),
  };
}

/** One capture to identify: its template and, when the capture knows it, its side. */
export interface Probe {
  template: Uint8Array;
  /** The capture's declared side; default: the template header's (both sides searched when unknown). */
  hand?: Hand | undefined;
  /**
   * This capture's search made earlier (a step-up's first capture, decided again with the other
   * hand): its users are taken as they are, their distances looked up afresh (a palm removed since
   * no longer counts), so the fused decision costs one search, not two.
   */
  search?: GallerySearch | undefined;
}

export interface IdentifyOutcome {
  decision: IdentificationDecision;
  /** Palms searched (the largest of the captures' searches): the decision's gallery size. */
  searched: number;
  /** Whether the captures were fused as independent evidence (both hands, each side known). */
  fused: boolean;
  /** The accepted user's closest palm (score: its best capture's), when the decision is a match. */
  hit: IdentifyHit | null;
  /** With a step-up: the hand to present next. */
  stepUpHand?: Hand;
  /** Each capture's search, in `probes` order (kept with a step-up's first capture). */
  searches: GallerySearch[];
}

const otherHand = (h: Hand): Hand => (h === 'left' ? 'right' : 'left');

/**
 * Decides on one capture or on several captures of one presentation (`probes`). Captures of the
 * two hands are independent evidence: per user, the best distance of each hand's captures gives
 * one evidence per hand, the two are summed and the sum meets the bar through Fisher's
 * combination (decision.ts `fusedEvidence`). Captures of one hand (frames of one presentation, or
 * a second presentation of the same hand) or of an unknown side are not independent: each user's
 * best distance counts once. `canStepUp`: the capture device can present the other hand in this
 * context; a step-up is offered only for captures of one known side whose candidate has a palm of
 * the other hand.
 */
export function identifyProbes(
  gallery: Gallery,
  probes: Probe[],
  options: { canStepUp?: boolean; rule?: IdentificationRule } = {},
): IdentifyOutcome {
  const rule = options.rule ?? gallery.rule;
  // the side each capture declares, else its template header's (every palm when unknown)
  const searches = probes.map(
    (p) => p.search ?? gallery.search(p.template, { side: p.hand, users: SEARCH_USERS }),
  );
  const sides = searches.map((s) => s.side);
  const distinct = new Set(sides);
  const independent = !distinct.has('any') && distinct.size === 2;
  // evidence groups: one per hand when independent, else one for every capture
  const group = sides.map((s) => (independent && s === 'left' ? 1 : 0));
  const groups = independent ? 2 : 1;
  const searched = Math.max(0, ...searches.map((s) => s.searched));
  // Every user any capture found, with its distance in every capture (looked up where a search
  // did not return it).
  const users = new Map<string, number[]>();
  const palmOf = new Map<string, { palmId: string; distance: number }>();
  searches.forEach((s, i) => {
    for (const c of s.candidates) {
      let ds = users.get(c.userId);
      if (!ds) {
        ds = new Array<number>(probes.length).fill(Number.NaN);
        users.set(c.userId, ds);
      }
      // an earlier search's distance is looked up again below (the gallery may have changed since)
      if (!probes[i]!.search) ds[i] = c.distance;
      const seen = palmOf.get(c.userId);
      if (!seen || c.distance < seen.distance)
        palmOf.set(c.userId, { palmId: c.palmId, distance: c.distance });
    }
  });
  const model = rule.policy.model;
  const candidates: Candidate[] = [];
  const closest = new Map<string, number>();
  const bestOf = [1, 1];
  for (const [userId, ds] of users) {
    bestOf[0] = 1;
    bestOf[1] = 1;
    for (let i = 0; i < probes.length; i++) {
      if (Number.isNaN(ds[i]!)) ds[i] = gallery.distanceTo(probes[i]!.template, userId, sides[i]!) ?? 1;
      const g = group[i]!;
      if (ds[i]! < bestOf[g]!) bestOf[g] = ds[i]!;
    }
    let evidence = 0;
    for (let g = 0; g < groups; g++) evidence += evidenceAt(bestOf[g]!, model);
    // fused hands: the sum is the best of (left templates × right templates) pairs (decision.ts)
    const pairs = independent
      ? Math.max(1, gallery.palmsOf(userId, 'left'), gallery.palmsOf(userId, 'right'))
      : undefined;
    candidates.push({ userId, evidence, pairs });
    closest.set(userId, Math.min(...ds));
  }
  const canStepUp = options.canStepUp === true && probes.length === 1 && sides[0] !== 'any';
  const decide = (stepUp: boolean) =>
    decideIdentification({
      gallery: searched,
      candidates,
      policy: rule.policy,
      canStepUp: stepUp,
      captures: groups,
    });
  let decision = decide(canStepUp);
  let stepUpHand: Hand | undefined;
  if (decision.kind === 'step_up') {
    stepUpHand = otherHand(sides[0] as Hand);
    // the other hand adds evidence only where the candidate has one enrolled
    if (!gallery.hasHand(decision.userId, stepUpHand)) {
      decision = decide(false);
      stepUpHand = undefined;
    }
  }
  // PALMID_MATCH_THRESHOLD: a per-comparison floor a site may raise above the gallery-wide bar
  // (on the match only: a step-up's first capture may lie below it, the fused decision meets it)
  if (decision.kind === 'match' && (closest.get(decision.userId) ?? 1) > rule.maxDistance) {
    decision = { kind: 'no_match', reason: 'below_bar', bar: decision.bar };
    stepUpHand = undefined;
  }
  const hit =
    decision.kind === 'match'
      ? {
          userId: decision.userId,
          palmId: palmOf.get(decision.userId)!.palmId,
          score: 1 - 2 * closest.get(decision.userId)!,
        }
      : null;
  return { decision, searched, fused: independent, hit, searches, ...(stepUpHand ? { stepUpHand } : {}) };
}

/** The best match of one capture by the gallery-wide rule, as the old single-hit answer. */
export function identifyOne(gallery: Gallery, template: Uint8Array): IdentifyHit | null {
  return identifyProbes(gallery, [{ template }]).hit;
}

/**
 * The duplicate-enrolment bar: the lowest bar any identification of this gallery applies, i.e.
 * the bar for the smallest non-empty one-side gallery (an identification searches the probe's
 * side only). Anything an identification could accept is a duplicate (stricter for safety: the
 * margin is not required, a second user as close does not excuse the first).
 */
export function duplicateBar(gallery: Gallery, rule: IdentificationRule = gallery.rule): number {
  const sides = [gallery.handCount('left'), gallery.handCount('right')].filter((n) => n > 0);
  const smallest = sides.length > 0 ? Math.min(...sides) : 1;
  return decisionBar(smallest, rule.policy.targetFpir);
}

/**
 * The enrolment duplicate check: every palm is searched, whatever side the template's header or
 * the request declares (a rewritten side byte cannot hide a palm; docs/security.md), and a user
 * other than `except` whose evidence reaches `duplicateBar` is a duplicate. The per-comparison
 * floor (PALMID_MATCH_THRESHOLD) does not apply: a site that raises it makes identification
 * stricter, never the rule that one palm is one account.
 */
export function findDuplicateIn(
  gallery: Gallery,
  template: Uint8Array,
  except: string | null = null,
): IdentifyHit | null {
  const bar = duplicateBar(gallery);
  const { candidates } = gallery.search(template, { side: 'any', users: 2 });
  for (const c of candidates) {
    if (c.userId === except) continue;
    if (evidenceAt(c.distance, gallery.rule.policy.model) >= bar)
      return { userId: c.userId, palmId: c.palmId, score: 1 - 2 * c.distance };
    return null; // candidates are closest first
  }
  return null;
}
