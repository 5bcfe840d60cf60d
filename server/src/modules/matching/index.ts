export { createExhaustiveGallery } from './exhaustive.ts';
export {
  createGallery,
  createMatcher,
  type GalleryOptions,
  type MatcherOptions,
  MemoryGallery,
} from './gallery.ts';
export type { Gallery, GalleryEntry, Hand, IdentifyHit, Matcher } from './types.ts';
