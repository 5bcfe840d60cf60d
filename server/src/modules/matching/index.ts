export { createExhaustiveGallery } from './exhaustive.ts';
export {
  createGallery,
  createMatcher,
  type GalleryOptions,
  type MatcherOptions,
  MemoryGallery,
} from './gallery.ts';
export { findDuplicateIn, identifyProbes, type IdentifyOutcome, type Probe } from './identify.ts';
export type {
  Gallery,
  GalleryEntry,
  GallerySearch,
  Hand,
  IdentificationRule,
  IdentifyHit,
  Matcher,
  UserCandidate,
} from './types.ts';
