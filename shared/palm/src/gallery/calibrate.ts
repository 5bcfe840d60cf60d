import {
  decisionBar,
  distanceForEvidence,
  fmrAt,
  type ImpostorModel,
  impostorModelFor,
} from '../decision.ts';
import { fitImpostorModel, MIN_TAIL_PAIRS } from '../impostor-fit.ts';
import type { CalibratableGallery, Gallery } from './types.ts';

/**
 * Gallery calibration (issue #24; docs/palm-pipeline.md "Identification at scale"): the impostor
 * model the decision reads evidence with is checked against the gallery's own palms.
 *
 * The shipped model (`impostorModelFor` the gallery's coding) is fitted on the development sets. A site's sensor,
 * light and population can make strangers resemble enrolled palms more often than those sets did
 * (the development sets' own tails differ by half a decade at FMR 1e-4, and COEP's look-alike
 * palms by more), and then the N-scaled bar would let more strangers through than the target. The
 * gallery holds that evidence for free: palms of two different users are impostor pairs of this
 * site's sensor and population. So once the gallery holds `CALIBRATION_MIN_USERS` users, a
 * sample of such pairs (same hand, as a search compares) is drawn, its lower tail fitted the way
 * `palm eval` fits a set's (`fitImpostorModel`), and the decision reads evidence with whichever of
 * the shipped model and the fit leaves a stranger more chance at the bars that matter (this
 * gallery's, and the design scale's): calibration can only make the decision stricter than
 * shipped, never looser, so a gallery of easy palms (or an attacker's enrolments) cannot lower
 * the bar.
 */

/** Users the gallery must hold before its own pairs are trusted to describe strangers. */
export const CALIBRATION_MIN_USERS = 200;
/** Impostor pairs sampled (resolving FMR down to MIN_TAIL_PAIRS / pairs = 5e-5). */
export const CALIBRATION_PAIRS = 200_000;
/**
 * The widest tail a gallery fit may describe and still be adopted: Daugman's degrees of freedom
 * of the development sets' tails lie at 222–542 (COEP with a re-captured person left unmerged: 117).
 * A fit below it says the gallery's palms share structure no palm population has (one palm
 * enrolled under many users, crafted templates); adopting it would make every palm, genuine ones
 * too, unidentifiable. Such a fit is reported (`fit_implausible`) and the shipped model kept.
 */
export const MIN_PLAUSIBLE_DOF = 100;
/** Pairs computed between yields to the event loop (≈ 20 ms of matching). */
const CHUNK = 5_000;

export function isCalibratable(gallery: Gallery): gallery is CalibratableGallery {
  const g = gallery as Partial<CalibratableGallery>;
  return typeof g.impostorDistances === 'function' && typeof g.useImpostorModel === 'function';
}

export interface GalleryCalibration {
  users: number;
  palms: number;
  /** impostor pairs the fit read (0 when the gallery was too small) */
  pairs: number;
  shipped: ImpostorModel;
  /** the fit of the gallery's impostor tail, or null (too small, or too few pairs in the tail) */
  fit: ImpostorModel | null;
  /** rms of log10 FMR, fit against measured, over the tail's check points (decades) */
  fitRmsDecades: number | null;
  /** the model the decision reads with from now on */
  model: ImpostorModel;
  source: 'shipped' | 'gallery';
  /**
   * why: `too_few_users`, `too_few_pairs`, `fit_lighter` (the shipped model is the stricter one,
   * kept) or `fit_heavier` (the gallery's palms resemble each other more than the shipped model
   * says: the fit decides) or `fit_implausible` (a tail wider than any palm population's,
   * `MIN_PLAUSIBLE_DOF`: the shipped model is kept and the operator warned)
   */
  reason: 'too_few_users' | 'too_few_pairs' | 'fit_lighter' | 'fit_heavier' | 'fit_implausible';
}

/** A small seeded generator (mulberry32): the same gallery gives the same sample and fit. */
export function seededUniform(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Whether `candidate` gives a stranger more chance than `reference` at any of the bars of
 * `galleries` palms (FMR at the distance where `reference` puts each bar).
 */
export function heavierAt(
  candidate: ImpostorModel,
  reference: ImpostorModel,
  galleries: number[],
  targetFpir: number,
): boolean {
  return galleries.some((n) => {
    const d = distanceForEvidence(decisionBar(n, targetFpir), reference);
    return fmrAt(d, candidate) > fmrAt(d, reference);
  });
}

/** The design scale's gallery (the one AMBIGUITY_FLOOR is the bar of at the default target). */
const DESIGN_GALLERY = 1e6;

/**
 * The rule of gallery calibration, given a fit of the gallery's impostor tail: the fit when it is
 * heavier than `shipped` at the bar of `palms` palms or of the design scale (1e6) and plausible
 * (dof ≥ MIN_PLAUSIBLE_DOF), else `shipped`. `palm eval` applies it to a set's own fit to show what
 * a large gallery of such palms would decide.
 */
export function calibratedModel(
  shipped: ImpostorModel,
  fit: ImpostorModel,
  palms: number,
  targetFpir: number,
):
  | { source: 'gallery'; model: ImpostorModel; reason: 'fit_heavier' }
  | { source: 'shipped'; model: ImpostorModel; reason: 'fit_lighter' | 'fit_implausible' } {
  if (!heavierAt(fit, shipped, [Math.max(1, palms), DESIGN_GALLERY], targetFpir))
    return { source: 'shipped', model: shipped, reason: 'fit_lighter' };
  if (fit.dof < MIN_PLAUSIBLE_DOF) return { source: 'shipped', model: shipped, reason: 'fit_implausible' };
  return { source: 'gallery', model: fit, reason: 'fit_heavier' };
}

export interface CalibrateOptions {
  /** the model shipped (default: the gallery's coding's, `impostorModelFor`) */
  shipped?: ImpostorModel;
  minUsers?: number;
  pairs?: number;
  seed?: number;
  /** awaited between chunks of pairs (default: a macrotask, so a server keeps answering) */
  pause?: () => Promise<void>;
}

/**
 * Calibrates `gallery` (see the module comment) and switches its decision to the resulting model.
 * The target FPIR is the gallery's own policy's.
 */
export async function calibrateGallery(
  gallery: CalibratableGallery,
  options: CalibrateOptions = {},
): Promise<GalleryCalibration> {
  const shipped = options.shipped ?? impostorModelFor(gallery.coding);
  const minUsers = options.minUsers ?? CALIBRATION_MIN_USERS;
  const want = Math.max(1, Math.floor(options.pairs ?? CALIBRATION_PAIRS));
  const pause = options.pause ?? (() => new Promise<void>((resolve) => setTimeout(resolve, 0)));
  const users = gallery.users;
  const palms = gallery.size;
  const base = { users, palms, shipped };
  const keep = (
    reason: GalleryCalibration['reason'],
    pairs: number,
    fit: ImpostorModel | null,
    rms: number | null,
  ) => {
    gallery.useImpostorModel(shipped);
    return { ...base, pairs, fit, fitRmsDecades: rms, model: shipped, source: 'shipped' as const, reason };
  };
  if (users < minUsers) return keep('too_few_users', 0, null, null);
  const random = seededUniform(options.seed ?? 19795);
  const sample = new Float64Array(want);
  let got = 0;
  while (got < want) {
    const part = gallery.impostorDistances(Math.min(CHUNK, want - got), random);
    if (part.length === 0) break;
    sample.set(part, got);
    got += part.length;
    if (got < want) await pause();
  }
  // a tail needs at least two resolved levels below FMR 1e-2 to be fitted
  if (got * 3e-3 < MIN_TAIL_PAIRS) return keep('too_few_pairs', got, null, null);
  const fitted = fitImpostorModel(sample.subarray(0, got));
  const fit = fitted.tail;
  const chosen = calibratedModel(shipped, fit, palms, gallery.rule.policy.targetFpir);
  gallery.useImpostorModel(chosen.model);
  return { ...base, pairs: got, fit, fitRmsDecades: fitted.tail_rms_decades.tail, ...chosen };
}
