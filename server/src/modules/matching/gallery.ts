import {
  compareTemplates,
  distanceToScore,
  PACKED_WORDS,
  packInto,
  probeMatcher,
} from '@palmid/shared/palm/match.ts';
import { decodeTemplate, popcount32, SIGNATURE_WORDS } from '@palmid/shared/palm/template.ts';
import { MATCH_THRESHOLD } from '@palmid/shared/palm/threshold.ts';
import type { Gallery, GalleryEntry, Hand, IdentifyHit, Matcher } from './types.ts';

export interface MatcherOptions {
  /** Similarity at or above which two palms match (default: calibrated to FMR 1e-4). */
  threshold?: number;
}

export interface GalleryOptions extends MatcherOptions {
  /** Candidates kept by the first stage for exact matching. */
  candidates?: number;
  /** Initial capacity (templates); the store grows by doubling. */
  capacity?: number;
}

export function createMatcher(options: MatcherOptions | number = {}): Matcher {
  const threshold = typeof options === 'number' ? options : (options.threshold ?? MATCH_THRESHOLD);
  return {
    validate(template) {
      decodeTemplate(template);
    },
    verify(a, b) {
      const score = compareTemplates(a, b);
      return { score, match: score >= threshold };
    },
  };
}

const HAND_CODE = { left: 1, right: 2 } as const;

/**
 * In-memory 1:N index. Stage 1 scans the 128-bit coarse signatures of every enrolled palm
 * (4 popcounts each) and keeps the closest `candidates`; stage 2 runs the exact, shift-searching
 * matcher on those only. Entries live in flat typed arrays (no per-palm objects) so a million
 * palms stay compact and scans stay cache-friendly; removal swaps the last entry into the hole.
 */
export class MemoryGallery implements Gallery {
  private readonly threshold: number;
  private readonly k: number;
  private capacity: number;
  private count = 0;
  private packed: Uint32Array;
  private signatures: Uint32Array;
  private hands: Uint8Array;
  private palmIds: string[] = [];
  private userIds: string[] = [];
  private readonly byUser = new Map<string, Set<number>>();
  private readonly byPalm = new Map<string, number>();

  constructor(options: GalleryOptions = {}) {
    this.threshold = options.threshold ?? MATCH_THRESHOLD;
    this.k = options.candidates ?? 200;
    this.capacity = Math.max(16, options.capacity ?? 1024);
    this.packed = new Uint32Array(this.capacity * PACKED_WORDS);
    this.signatures = new Uint32Array(this.capacity * SIGNATURE_WORDS);
    this.hands = new Uint8Array(this.capacity);
  }

  get size(): number {
    return this.count;
  }

  add(entry: GalleryEntry): void {
    const t = decodeTemplate(entry.template);
    if (this.byPalm.has(entry.palmId)) this.removeIndex(this.byPalm.get(entry.palmId)!);
    if (this.count === this.capacity) this.grow();
    const i = this.count++;
    packInto(t, this.packed, i * PACKED_WORDS);
    this.signatures.set(t.signature, i * SIGNATURE_WORDS);
    this.hands[i] = HAND_CODE[entry.hand];
    this.palmIds[i] = entry.palmId;
    this.userIds[i] = entry.userId;
    this.byPalm.set(entry.palmId, i);
    let set = this.byUser.get(entry.userId);
    if (!set) {
      set = new Set();
      this.byUser.set(entry.userId, set);
    }
    set.add(i);
  }

  removeUser(userId: string): void {
    const set = this.byUser.get(userId);
    if (!set) return;
    // remove from the highest index down so swaps never move an index still in the set
    for (const i of [...set].sort((a, b) => b - a)) this.removeIndex(i);
    this.byUser.delete(userId);
  }

  identify(template: Uint8Array, hand?: Hand): IdentifyHit | null {
    const hit = this.search(template, hand);
    return hit && hit.score >= this.threshold ? hit : null;
  }

  /** Best candidate regardless of the threshold (for calibration and diagnostics). */
  search(template: Uint8Array, hand?: Hand): IdentifyHit | null {
    const t = decodeTemplate(template);
    if (this.count === 0) return null;
    const probe = new Uint32Array(PACKED_WORDS);
    packInto(t, probe, 0);
    const probeHand = hand ? HAND_CODE[hand] : t.hand === 'unknown' ? 0 : HAND_CODE[t.hand];
    const candidates = this.firstStage(t.signature, probeHand);
    let best = -1;
    let bestD = Number.POSITIVE_INFINITY;
    const match = probeMatcher(probe); // the probe is laid out once for all candidates
    for (const i of candidates) {
      const d = match(this.packed, i * PACKED_WORDS);
      if (d < bestD) {
        bestD = d;
        best = i;
      }
    }
    if (best < 0) return null;
    return { userId: this.userIds[best]!, palmId: this.palmIds[best]!, score: distanceToScore(bestD) };
  }

  /** Indices of the k signatures closest in Hamming distance (bounded insertion list). */
  private firstStage(sig: Uint32Array, hand: number): number[] {
    const k = Math.min(this.k, this.count);
    const idx = new Int32Array(k).fill(-1);
    const dist = new Int32Array(k).fill(0x7fffffff);
    let worst = 0x7fffffff;
    const s0 = sig[0]!;
    const s1 = sig[1]!;
    const s2 = sig[2]!;
    const s3 = sig[3]!;
    const sigs = this.signatures;
    const hands = this.hands;
    for (let i = 0, o = 0; i < this.count; i++, o += 4) {
      const d =
        popcount32(s0 ^ sigs[o]!) +
        popcount32(s1 ^ sigs[o + 1]!) +
        popcount32(s2 ^ sigs[o + 2]!) +
        popcount32(s3 ^ sigs[o + 3]!);
      if (d >= worst) continue;
      if (hand !== 0 && hands[i] !== hand) continue;
      let j = k - 1;
      while (j > 0 && dist[j - 1]! > d) {
        dist[j] = dist[j - 1]!;
        idx[j] = idx[j - 1]!;
        j--;
      }
      dist[j] = d;
      idx[j] = i;
      worst = dist[k - 1]!;
    }
    const out: number[] = [];
    for (const i of idx) if (i >= 0) out.push(i);
    return out;
  }

  private removeIndex(i: number): void {
    const last = this.count - 1;
    const palmId = this.palmIds[i]!;
    const userId = this.userIds[i]!;
    this.byPalm.delete(palmId);
    this.byUser.get(userId)?.delete(i);
    if (i !== last) {
      this.packed.copyWithin(i * PACKED_WORDS, last * PACKED_WORDS, (last + 1) * PACKED_WORDS);
      this.signatures.copyWithin(i * SIGNATURE_WORDS, last * SIGNATURE_WORDS, (last + 1) * SIGNATURE_WORDS);
      this.hands[i] = this.hands[last]!;
      const movedPalm = this.palmIds[last]!;
      const movedUser = this.userIds[last]!;
      this.palmIds[i] = movedPalm;
      this.userIds[i] = movedUser;
      this.byPalm.set(movedPalm, i);
      const set = this.byUser.get(movedUser);
      set?.delete(last);
      set?.add(i);
    }
    this.palmIds.length = last;
    this.userIds.length = last;
    this.count = last;
  }

  private grow(): void {
    this.capacity *= 2;
    const packed = new Uint32Array(this.capacity * PACKED_WORDS);
    packed.set(this.packed);
    this.packed = packed;
    const signatures = new Uint32Array(this.capacity * SIGNATURE_WORDS);
    signatures.set(this.signatures);
    this.signatures = signatures;
    const hands = new Uint8Array(this.capacity);
    hands.set(this.hands);
    this.hands = hands;
  }
}

/** The default gallery; the matcher argument is accepted for the bootstrap's call shape. */
export function createGallery(_matcher?: Matcher, options: GalleryOptions = {}): MemoryGallery {
  return new MemoryGallery(options);
}
