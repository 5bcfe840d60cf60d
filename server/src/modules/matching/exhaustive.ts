import { distanceToScore, PACKED_WORDS, packedDistance, packInto } from '@palmid/shared/palm/match.ts';
import { decodeTemplate } from '@palmid/shared/palm/template.ts';
import { MATCH_THRESHOLD } from '@palmid/shared/palm/threshold.ts';
import type { Gallery, GalleryEntry, IdentifyHit } from './types.ts';

/**
 * Exhaustive gallery: every enrolled template packed in one contiguous array and compared in turn.
 * Exact, and the reference for an indexed gallery.
 */
export function createExhaustiveGallery(threshold = MATCH_THRESHOLD): Gallery {
  let packed = new Uint32Array(PACKED_WORDS * 64);
  const entries: { palmId: string; userId: string }[] = [];
  const best = (template: Uint8Array, bar: number): IdentifyHit | null => {
    const probe = new Uint32Array(PACKED_WORDS);
    packInto(decodeTemplate(template), probe, 0);
    let hit: IdentifyHit | null = null;
    for (let i = 0; i < entries.length; i++) {
      const score = distanceToScore(packedDistance(probe, 0, packed, i * PACKED_WORDS));
      if (score >= bar && (!hit || score > hit.score)) hit = { ...entries[i]!, score };
    }
    return hit;
  };
  return {
    add(entry: GalleryEntry) {
      const t = decodeTemplate(entry.template);
      if ((entries.length + 1) * PACKED_WORDS > packed.length) {
        const grown = new Uint32Array(packed.length * 2);
        grown.set(packed);
        packed = grown;
      }
      packInto(t, packed, entries.length * PACKED_WORDS);
      entries.push({ palmId: entry.palmId, userId: entry.userId });
    },
    removeUser(userId: string) {
      for (let i = entries.length - 1; i >= 0; i--) {
        if (entries[i]!.userId !== userId) continue;
        const last = entries.length - 1;
        if (i !== last) {
          packed.copyWithin(i * PACKED_WORDS, last * PACKED_WORDS, (last + 1) * PACKED_WORDS);
          entries[i] = entries[last]!;
        }
        entries.pop();
      }
    },
    identify(template: Uint8Array): IdentifyHit | null {
      return best(template, threshold);
    },
    findDuplicate(template: Uint8Array): IdentifyHit | null {
      return best(template, Math.min(threshold, MATCH_THRESHOLD));
    },
    get size() {
      return entries.length;
    },
  };
}
