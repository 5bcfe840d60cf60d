import { type IdentificationPolicy, type ImpostorModel, impostorModelFor } from '../decision.ts';
import { compareTemplates, PACKED_WORDS, packedDistance, packInto, probeMatcher } from '../match.ts';
import { decodeTemplate, type PalmTemplate, type TemplateCoding } from '../template.ts';
import { matchThresholdFor } from '../threshold.ts';
import { findDuplicateIn, identificationRule, identifyOne } from './identify.ts';
import { MAX_DESCRIPTOR_DISTANCE, Stage1Store } from './stage1.ts';
import { TopUsers } from './top-users.ts';
import type {
  CalibratableGallery,
  GalleryEntry,
  GallerySearch,
  Hand,
  IdentificationRule,
  IdentifyHit,
  Matcher,
  SearchOptions,
  SearchSide,
} from './types.ts';

export interface MatcherOptions {
  /** Similarity at or above which two palms match (default: the coding's, calibrated to FMR 1e-4). */
  threshold?: number;
  /** The template coding compared (server PALMID_TEMPLATE_CODING); others are refused. Default `wide`. */
  coding?: TemplateCoding;
}

export interface GalleryOptions extends MatcherOptions {
  /**
   * The identification policy (target FPIR, margin, step-up window, impostor model); default
   * DEFAULT_POLICY with the coding's impostor model (`impostorModelFor`).
   */
  policy?: Partial<IdentificationPolicy>;
  /**
   * Candidates kept by the first stage for exact matching (default `DEFAULT_CANDIDATES`). A gallery
   * no larger than this is searched exhaustively, so its result is the exhaustive scan's.
   */
  candidates?: number;
  /** Scan the first stage with the WebAssembly SIMD kernel when the engine has it (default true). */
  simd?: boolean;
  /** Initial capacity (templates); the store grows by doubling. */
  capacity?: number;
}

export function createMatcher(options: MatcherOptions | number = {}): Matcher {
  const o = typeof options === 'number' ? { threshold: options } : options;
  const coding = o.coding ?? 'wide';
  const threshold = o.threshold ?? matchThresholdFor(coding);
  return {
    validate(template) {
      decodeTemplate(template, coding);
    },
    verify(a, b) {
      const score = compareTemplates(a, b);
      return { score, match: score >= threshold };
    },
  };
}

const HAND_CODE = { left: 1, right: 2 } as const;

/**
 * Default shortlist of the first stage. At ≈ 4.6 µs per exact comparison, 4096 candidates cost
 * ≈ 19 ms, which with the ≈ 3 ms SIMD scan keeps 1:N at 1M palms well inside 50 ms on one core,
 * and makes every gallery of up to 4096 palms exact (see docs/palm-pipeline.md for recall).
 */
export const DEFAULT_CANDIDATES = 4096;

/**
 * In-memory 1:N index. Stage 1 scans a 768-bit block-orientation descriptor of every enrolled palm
 * (stage1.ts; derived from the code planes at enrol time) and keeps the closest `candidates`;
 * stage 2 runs the exact, shift-searching matcher on those only. Entries live in flat typed arrays (no per-palm objects) so a million
 * palms stay compact and scans stay cache-friendly; removal swaps the last entry into the hole.
 */
export class MemoryGallery implements CalibratableGallery {
  readonly rule: IdentificationRule;
  /** The template coding this gallery holds and compares (others are refused). */
  readonly coding: TemplateCoding;
  private readonly top = new TopUsers();
  private readonly perHand = { left: 0, right: 0 };
  private readonly k: number;
  private capacity: number;
  private count = 0;
  private packed: Uint32Array;
  private readonly stage1: Stage1Store;
  private readonly histogram = new Uint32Array(MAX_DESCRIPTOR_DISTANCE + 2);
  private hands: Uint8Array;
  private palmIds: string[] = [];
  private userIds: string[] = [];
  private readonly byUser = new Map<string, Set<number>>();
  private readonly byPalm = new Map<string, number>();

  constructor(options: GalleryOptions = {}) {
    this.coding = options.coding ?? 'wide';
    this.rule = identificationRule({
      threshold: options.threshold ?? matchThresholdFor(this.coding),
      policy: { model: impostorModelFor(this.coding), ...options.policy },
    });
    this.k = Math.max(1, options.candidates ?? DEFAULT_CANDIDATES);
    this.capacity = Math.max(16, options.capacity ?? 1024);
    this.packed = new Uint32Array(this.capacity * PACKED_WORDS);
    this.stage1 = new Stage1Store(this.capacity, options.simd ?? true);
    this.hands = new Uint8Array(this.capacity);
  }

  get size(): number {
    return this.count;
  }

  get users(): number {
    let n = 0;
    for (const set of this.byUser.values()) if (set.size > 0) n++;
    return n;
  }

  /**
   * `pairs` raw distances between palms of two different users of one hand, each pair drawn
   * uniformly (with replacement) with `random`: the gallery's own impostor distribution
   * (calibrate.ts). Fewer when the gallery has no such pair.
   */
  impostorDistances(pairs: number, random: () => number): Float64Array {
    const out = new Float64Array(Math.max(0, pairs));
    const n = this.count;
    let k = 0;
    for (let tries = 0; k < out.length && tries < out.length * 50; tries++) {
      const i = Math.floor(random() * n);
      const j = Math.floor(random() * n);
      if (this.userIds[i] === this.userIds[j] || this.hands[i] !== this.hands[j]) continue;
      out[k++] = packedDistance(this.packed, i * PACKED_WORDS, this.packed, j * PACKED_WORDS);
    }
    return out.subarray(0, k);
  }

  useImpostorModel(model: ImpostorModel): void {
    this.rule.policy = { ...this.rule.policy, model };
  }

  add(entry: GalleryEntry): void {
    const t = decodeTemplate(entry.template, this.coding);
    if (this.byPalm.has(entry.palmId)) this.removeIndex(this.byPalm.get(entry.palmId)!);
    if (this.count === this.capacity) this.grow();
    const i = this.count++;
    packInto(t, this.packed, i * PACKED_WORDS);
    this.stage1.set(i, t);
    this.hands[i] = HAND_CODE[entry.hand];
    this.perHand[entry.hand]++;
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

  identify(template: Uint8Array): IdentifyHit | null {
    return identifyOne(this, template);
  }

  findDuplicate(template: Uint8Array, except: string | null = null): IdentifyHit | null {
    return findDuplicateIn(this, template, except);
  }

  handCount(hand: Hand): number {
    return this.perHand[hand];
  }

  hasHand(userId: string, hand: Hand): boolean {
    const code = HAND_CODE[hand];
    for (const i of this.byUser.get(userId) ?? []) if (this.hands[i] === code) return true;
    return false;
  }

  palmsOf(userId: string, hand: Hand): number {
    const code = HAND_CODE[hand];
    let n = 0;
    for (const i of this.byUser.get(userId) ?? []) if (this.hands[i] === code) n++;
    return n;
  }

  distanceTo(template: Uint8Array, userId: string, side: SearchSide): number | null {
    const set = this.byUser.get(userId);
    if (!set || set.size === 0) return null;
    const probe = new Uint32Array(PACKED_WORDS);
    packInto(decodeTemplate(template, this.coding), probe, 0);
    const match = probeMatcher(probe);
    const code = side === 'any' ? 0 : HAND_CODE[side];
    let best: number | null = null;
    for (const i of set) {
      if (code !== 0 && this.hands[i] !== code) continue;
      const d = match(this.packed, i * PACKED_WORDS);
      if (best === null || d < best) best = d;
    }
    return best;
  }

  /**
   * The closest different users (raw distances, closest first) among the palms of the searched
   * side, and how many palms that side holds (the decision's gallery size).
   */
  search(template: Uint8Array, options: SearchOptions = {}): GallerySearch {
    const t = decodeTemplate(template, this.coding);
    const side = options.side ?? (t.hand === 'unknown' ? 'any' : t.hand);
    if (this.count === 0) return { side, searched: 0, candidates: [] };
    const probe = new Uint32Array(PACKED_WORDS);
    packInto(t, probe, 0);
    const probeHand = side === 'any' ? 0 : HAND_CODE[side];
    const searched = probeHand === 0 ? this.count : this.perHand[side as Hand];
    const candidates = this.firstStage(t, probeHand);
    const top = this.top;
    top.reset(options.users ?? 2);
    const users = this.userIds;
    const match = probeMatcher(probe); // the probe is laid out once for all candidates
    for (const i of candidates) top.offer(i, match(this.packed, i * PACKED_WORDS), users);
    return { side, searched, candidates: top.read(users, this.palmIds) };
  }

  /**
   * Indices of the k palms (of the probe's hand) with the closest descriptors: all distances in one
   * scan, a histogram of them gives the cut-off distance, ties at the cut-off go to lower indices.
   */
  private firstStage(t: PalmTemplate, hand: number): Int32Array {
    const n = this.count;
    const hands = this.hands;
    const d = this.stage1.scan(t, n);
    const h = this.histogram;
    h.fill(0);
    let eligible = 0;
    for (let i = 0; i < n; i++) {
      if (hand !== 0 && hands[i] !== hand) continue;
      h[d[i]!]!++;
      eligible++;
    }
    const k = Math.min(this.k, eligible);
    const out = new Int32Array(k);
    if (k === 0) return out;
    let cut = 0;
    let below = 0; // palms strictly closer than `cut`
    while (below + h[cut]! < k) below += h[cut++]!;
    let atCut = k - below; // palms at exactly `cut` still to take
    let j = 0;
    for (let i = 0; i < n && j < k; i++) {
      if (hand !== 0 && hands[i] !== hand) continue;
      const di = d[i]!;
      if (di < cut) out[j++] = i;
      else if (di === cut && atCut > 0) {
        out[j++] = i;
        atCut--;
      }
    }
    return out;
  }

  private removeIndex(i: number): void {
    const last = this.count - 1;
    const palmId = this.palmIds[i]!;
    const userId = this.userIds[i]!;
    this.byPalm.delete(palmId);
    this.byUser.get(userId)?.delete(i);
    this.perHand[this.hands[i] === HAND_CODE.left ? 'left' : 'right']--;
    if (i !== last) {
      this.packed.copyWithin(i * PACKED_WORDS, last * PACKED_WORDS, (last + 1) * PACKED_WORDS);
      this.stage1.move(last, i);
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
    this.stage1.reserve(this.capacity, this.count);
    const hands = new Uint8Array(this.capacity);
    hands.set(this.hands);
    this.hands = hands;
  }
}

/** The default gallery; the matcher argument is accepted for the bootstrap's call shape. */
export function createGallery(_matcher?: Matcher, options: GalleryOptions = {}): MemoryGallery {
  return new MemoryGallery(options);
}
