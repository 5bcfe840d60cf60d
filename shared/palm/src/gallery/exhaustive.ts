import type { IdentificationPolicy } from '../decision.ts';
import { PACKED_WORDS, packedDistance, packInto } from '../match.ts';
import { decodeTemplate } from '../template.ts';
import { MATCH_THRESHOLD } from '../threshold.ts';
import { findDuplicateIn, identificationRule, identifyOne } from './identify.ts';
import { TopUsers } from './top-users.ts';
import type { Gallery, GalleryEntry, GallerySearch, Hand, SearchOptions, SearchSide } from './types.ts';

/**
 * Exhaustive gallery: every enrolled template packed in one contiguous array and compared in turn.
 * Exact, and the reference for an indexed gallery; it decides by the same rule (identify.ts).
 */
export function createExhaustiveGallery(
  threshold = MATCH_THRESHOLD,
  policy?: Partial<IdentificationPolicy>,
): Gallery {
  let packed = new Uint32Array(PACKED_WORDS * 64);
  const palms: string[] = [];
  const users: string[] = [];
  const hands: Hand[] = [];
  const top = new TopUsers();
  const pack = (template: Uint8Array) => {
    const probe = new Uint32Array(PACKED_WORDS);
    packInto(decodeTemplate(template), probe, 0);
    return probe;
  };
  const gallery: Gallery = {
    rule: identificationRule({ threshold, policy }),
    add(entry: GalleryEntry) {
      const t = decodeTemplate(entry.template);
      if ((palms.length + 1) * PACKED_WORDS > packed.length) {
        const grown = new Uint32Array(packed.length * 2);
        grown.set(packed);
        packed = grown;
      }
      packInto(t, packed, palms.length * PACKED_WORDS);
      palms.push(entry.palmId);
      users.push(entry.userId);
      hands.push(entry.hand);
    },
    removeUser(userId: string) {
      for (let i = palms.length - 1; i >= 0; i--) {
        if (users[i] !== userId) continue;
        const last = palms.length - 1;
        if (i !== last) {
          packed.copyWithin(i * PACKED_WORDS, last * PACKED_WORDS, (last + 1) * PACKED_WORDS);
          palms[i] = palms[last]!;
          users[i] = users[last]!;
          hands[i] = hands[last]!;
        }
        palms.pop();
        users.pop();
        hands.pop();
      }
    },
    search(template: Uint8Array, options: SearchOptions = {}): GallerySearch {
      const t = decodeTemplate(template);
      const side = options.side ?? (t.hand === 'unknown' ? 'any' : t.hand);
      const probe = pack(template);
      top.reset(options.users ?? 2);
      let searched = 0;
      for (let i = 0; i < palms.length; i++) {
        if (side !== 'any' && hands[i] !== side) continue;
        searched++;
        top.offer(i, packedDistance(probe, 0, packed, i * PACKED_WORDS), users);
      }
      return { side, searched, candidates: top.read(users, palms) };
    },
    distanceTo(template: Uint8Array, userId: string, side: SearchSide) {
      const probe = pack(template);
      let best: number | null = null;
      for (let i = 0; i < palms.length; i++) {
        if (users[i] !== userId || (side !== 'any' && hands[i] !== side)) continue;
        const d = packedDistance(probe, 0, packed, i * PACKED_WORDS);
        if (best === null || d < best) best = d;
      }
      return best;
    },
    hasHand: (userId, hand) => users.some((u, i) => u === userId && hands[i] === hand),
    palmsOf: (userId, hand) => users.filter((u, i) => u === userId && hands[i] === hand).length,
    handCount: (hand) => hands.filter((h) => h === hand).length,
    identify: (template) => identifyOne(gallery, template),
    findDuplicate: (template, except) => findDuplicateIn(gallery, template, except ?? null),
    get size() {
      return palms.length;
    },
  };
  return gallery;
}
