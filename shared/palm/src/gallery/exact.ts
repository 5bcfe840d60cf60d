import { AppError } from '@palmid/contracts/errors';
import { findDuplicateIn, identificationRule, identifyOne } from './identify.ts';
import type {
  Gallery,
  GalleryEntry,
  GallerySearch,
  Hand,
  IdentifyHit,
  Matcher,
  SearchOptions,
  SearchSide,
} from './types.ts';

/**
 * Test doubles for the palm matcher: templates are equal or not. The real matcher has its own tests;
 * domain tests only need a deterministic identify(). Equal templates are at distance 0 (every
 * gallery-wide bar is met), others at 0.5 (no evidence), so the shared decision applies unchanged.
 */
export class ExactMatcher implements Matcher {
  validate(template: Uint8Array): void {
    if (template.length < 4 || template.length > 1024) {
      throw new AppError('INVALID_REQUEST', 'Malformed template', { field: 'template', reason: 'malformed' });
    }
  }
  verify(a: Uint8Array, b: Uint8Array) {
    const match = Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
    return { score: match ? 1 : 0, match };
  }
}

const same = (a: Uint8Array, b: Uint8Array) => Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;

export class ExactGallery implements Gallery {
  readonly entries: GalleryEntry[] = [];
  readonly rule = identificationRule();
  add(entry: GalleryEntry): void {
    this.entries.push(entry);
  }
  removeUser(userId: string): void {
    for (let i = this.entries.length - 1; i >= 0; i--)
      if (this.entries[i]!.userId === userId) this.entries.splice(i, 1);
  }
  /** Test templates carry no meaningful header: a search compares every palm unless a side is given. */
  search(template: Uint8Array, options: SearchOptions = {}): GallerySearch {
    const side = options.side ?? 'any';
    const pool = this.entries.filter((e) => side === 'any' || e.hand === side);
    const best = new Map<string, { palmId: string; distance: number }>();
    for (const e of pool) {
      const distance = same(e.template, template) ? 0 : 0.5;
      const seen = best.get(e.userId);
      if (!seen || distance < seen.distance) best.set(e.userId, { palmId: e.palmId, distance });
    }
    const candidates = [...best]
      .map(([userId, b]) => ({ userId, ...b }))
      .sort((a, b) => a.distance - b.distance)
      .slice(0, options.users ?? 2);
    return { side, searched: pool.length, candidates };
  }
  distanceTo(template: Uint8Array, userId: string, side: SearchSide): number | null {
    const mine = this.entries.filter((e) => e.userId === userId && (side === 'any' || e.hand === side));
    if (mine.length === 0) return null;
    return mine.some((e) => same(e.template, template)) ? 0 : 0.5;
  }
  hasHand(userId: string, hand: Hand): boolean {
    return this.entries.some((e) => e.userId === userId && e.hand === hand);
  }
  palmsOf(userId: string, hand: Hand): number {
    return this.entries.filter((e) => e.userId === userId && e.hand === hand).length;
  }
  handCount(hand: Hand): number {
    return this.entries.filter((e) => e.hand === hand).length;
  }
  identify(template: Uint8Array): IdentifyHit | null {
    return identifyOne(this, template);
  }
  findDuplicate(template: Uint8Array, except: string | null = null): IdentifyHit | null {
    return findDuplicateIn(this, template, except);
  }
  get size(): number {
    return this.entries.length;
  }
}
