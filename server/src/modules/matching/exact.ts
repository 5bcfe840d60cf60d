import { AppError } from '@palmid/shared/errors.ts';
import type { Gallery, GalleryEntry, IdentifyHit, Matcher } from './types.ts';

/**
 * Test doubles for the palm matcher: templates are equal or not. The real matcher has its own tests;
 * domain tests only need a deterministic identify().
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

export class ExactGallery implements Gallery {
  readonly entries: GalleryEntry[] = [];
  add(entry: GalleryEntry): void {
    this.entries.push(entry);
  }
  removeUser(userId: string): void {
    for (let i = this.entries.length - 1; i >= 0; i--)
      if (this.entries[i]!.userId === userId) this.entries.splice(i, 1);
  }
  identify(template: Uint8Array): IdentifyHit | null {
    const hit = this.entries.find(
      (e) => Buffer.compare(Buffer.from(e.template), Buffer.from(template)) === 0,
    );
    return hit ? { userId: hit.userId, palmId: hit.palmId, score: 1 } : null;
  }
  findDuplicate(template: Uint8Array): IdentifyHit | null {
    return this.identify(template);
  }
  get size(): number {
    return this.entries.length;
  }
}
