/**
 * The contract between the server's domain (auth contexts, enrolment) and the palm matcher.
 * Templates are the versioned binary format of `@palmid/palm` (≤ 1 KB, with a header).
 */
import type { IdentificationPolicy, ImpostorModel } from '../decision.ts';
import type { TemplateCoding } from '../template.ts';

export type Hand = 'left' | 'right';

/** The identification rule a gallery applies (server config: PALMID_TARGET_FPIR, PALMID_MATCH_THRESHOLD). */
export interface IdentificationRule {
  policy: IdentificationPolicy;
  /**
   * Per-comparison floor: a candidate farther than this raw distance is never accepted, whatever
   * the gallery-wide bar says (PALMID_MATCH_THRESHOLD = 1 − 2 × maxDistance; the calibrated
   * default lies below every N-scaled bar, so it binds only where a site raises it).
   */
  maxDistance: number;
}

export interface GalleryEntry {
  /** Stable id of this enrolled palm sample. */
  palmId: string;
  userId: string;
  hand: Hand;
  template: Uint8Array;
}

export interface IdentifyHit {
  userId: string;
  palmId: string;
  /** Similarity in [0, 1]; higher is more alike. */
  score: number;
}

/** A user's closest palm to a probe: the matcher's raw distance (score = 1 − 2 × distance). */
export interface UserCandidate {
  userId: string;
  palmId: string;
  distance: number;
}

/** Which palms a search compares: one side, or every palm (`any`). */
export type SearchSide = Hand | 'any';

export interface SearchOptions {
  /** Default: the side in the template's header (every palm when it says `unknown`). */
  side?: SearchSide | undefined;
  /** How many different users to return, closest first (default 2: the best and the next user). */
  users?: number | undefined;
}

export interface GallerySearch {
  /** The side searched (the one asked for, else the template header's; `any` when it says unknown). */
  side: SearchSide;
  /** Palms the search compared the probe with (the gallery size of the identification decision). */
  searched: number;
  /** The best palm of each of the closest different users, closest first. */
  candidates: UserCandidate[];
}

export interface Matcher {
  /** Throws AppError('INVALID_REQUEST', …, {field: 'template', reason}) for a malformed template. */
  validate(template: Uint8Array): void;
  /** 1:1 comparison with alignment search. */
  verify(a: Uint8Array, b: Uint8Array): { score: number; match: boolean };
}

export interface Gallery {
  add(entry: GalleryEntry): void;
  /** Removes every palm of the user (erasure). */
  removeUser(userId: string): void;
  /** Raw search: the closest different users and how many palms were compared (matching/identify.ts decides). */
  search(template: Uint8Array, options?: SearchOptions): GallerySearch;
  /** The smallest distance from the probe to `userId`'s palms of `side` (all: `any`); null when it has none. */
  distanceTo(template: Uint8Array, userId: string, side: SearchSide): number | null;
  /** Whether the user has an enrolled palm of this hand (a step-up to it can add evidence). */
  hasHand(userId: string, hand: Hand): boolean;
  /** How many palms (templates) the user has enrolled of this hand. */
  palmsOf(userId: string, hand: Hand): number;
  /** Palms enrolled per hand. */
  handCount(hand: Hand): number;
  /** How this gallery decides (PALMID_TARGET_FPIR, PALMID_MATCH_THRESHOLD; matching/identify.ts). */
  readonly rule: IdentificationRule;
  /**
   * One capture, no step-up: the user the gallery-wide decision (identify.ts) accepts, or null.
   */
  identify(template: Uint8Array): IdentifyHit | null;
  /**
   * The duplicate-enrolment check (identify.ts `findDuplicate`): a palm of a user other than
   * `except` whose evidence reaches the lowest bar any identification of this gallery applies,
   * searched over every palm whatever side the header or the request declares; or null.
   */
  findDuplicate(template: Uint8Array, except?: string | null): IdentifyHit | null;
  readonly size: number;
}

/** A gallery that can be calibrated: its impostor pairs, and the model its decision reads. */
export interface CalibratableGallery extends Gallery {
  /** The template coding the gallery holds: its shipped impostor model is that coding's. */
  readonly coding?: TemplateCoding;
  /** Users with at least one palm. */
  readonly users: number;
  /** `pairs` raw distances between palms of two different users of one hand, drawn with `random`. */
  impostorDistances(pairs: number, random: () => number): Float64Array;
  /** Reads evidence with `model` from now on. */
  useImpostorModel(model: ImpostorModel): void;
}
