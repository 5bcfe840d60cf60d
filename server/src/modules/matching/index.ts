export { createExhaustiveGallery } from '@palmid/palm/gallery/exhaustive';
export {
  createGallery,
  createMatcher,
  type GalleryOptions,
  type MatcherOptions,
  MemoryGallery,
} from '@palmid/palm/gallery/gallery';
export {
  findDuplicateIn,
  type IdentifyOutcome,
  identifyProbes,
  type Probe,
} from '@palmid/palm/gallery/identify';
export type {
  Gallery,
  GalleryEntry,
  GallerySearch,
  Hand,
  IdentificationRule,
  IdentifyHit,
  Matcher,
  UserCandidate,
} from '@palmid/palm/gallery/types';
