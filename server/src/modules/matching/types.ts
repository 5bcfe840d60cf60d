/**
 * The contract between the server's domain (auth contexts, enrolment) and the palm matcher.
 * Templates are the versioned binary format of `@palmid/shared/palm` (≤ 1 KB, with a header).
 */
export type Hand = 'left' | 'right';

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
  /** Best match at or above the gallery's threshold (PALMID_MATCH_THRESHOLD), or null. */
  identify(template: Uint8Array): IdentifyHit | null;
  /**
   * The duplicate-enrolment check: best match at or above the calibrated default MATCH_THRESHOLD
   * (or the gallery's own threshold where that is lower), or null. A site that raises its match
   * threshold makes identification stricter, never the rule that one palm is one account.
   */
  findDuplicate(template: Uint8Array): IdentifyHit | null;
  readonly size: number;
}
