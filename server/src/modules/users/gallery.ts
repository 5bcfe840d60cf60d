import { AppError } from '@palmid/contracts/errors';
import type { AppContext } from '../../context.ts';
import { open } from '../../crypto/keyring.ts';
import { userStore } from './store.ts';

/**
 * The users' palms in the in-memory gallery (modules/matching): loaded at start-up, kept in step with
 * enrolments, palm removals and erasures on other instances. Templates are decrypted only here.
 */

/**
 * Loads every enrolled palm into the in-memory gallery (at start-up). Templates are decrypted only here.
 * Palms of another template coding than the network's (PALMID_TEMPLATE_CODING changed after they were
 * enrolled) cannot be compared: they are left out, counted in one warning.
 */
export async function loadGallery(ctx: AppContext): Promise<number> {
  const rows = await userStore(ctx.database.db).allSealedPalms();
  const keys = new Map<string, Buffer>();
  let otherCoding = 0;
  for (const r of rows) {
    if (!r.wrapped_key) continue;
    let key = keys.get(r.user_id);
    if (!key) {
      key = ctx.keyring.unwrap(r.user_id, r.wrapped_key);
      keys.set(r.user_id, key);
    }
    const template = open(key, r.template_enc, `palm:${r.user_id}:${r.id}`);
    if (addPalm(ctx, { palmId: r.id, userId: r.user_id, hand: r.hand, template: new Uint8Array(template) }))
      otherCoding++;
  }
  if (otherCoding > 0)
    process.emitWarning(
      `${otherCoding} enrolled palm(s) are coded otherwise than PALMID_TEMPLATE_CODING=${ctx.config.PALMID_TEMPLATE_CODING} ` +
        'and are not searched: re-enrol those users, or set the coding they were enrolled with (docs/deployment.md)',
    );
  return rows.length - otherCoding;
}

/** Adds one stored palm; true when it is of another template coding (left out), other errors thrown. */
function addPalm(ctx: AppContext, entry: Parameters<AppContext['gallery']['add']>[0]): boolean {
  try {
    ctx.gallery.add(entry);
    return false;
  } catch (err) {
    if (err instanceof AppError && err.details?.reason === 'wrong_coding') return true;
    throw err;
  }
}

/** Called after the erasing transaction commits. */
export function forgetPalms(ctx: AppContext, userId: string): void {
  ctx.gallery.removeUser(userId);
  ctx.events.publish('gallery.changed', { userId, action: 'remove' });
}

/**
 * (Re)loads one user's palms into this instance's gallery: drops what the gallery holds for the user, then
 * adds every palm in the store (none if erased). Idempotent, so a repeated or late event cannot duplicate
 * palms. Used when another instance enrolled or updated the user.
 */
export async function loadUserPalms(ctx: AppContext, userId: string): Promise<number> {
  const rows = await userStore(ctx.database.db).sealedPalmsOf(userId);
  const entries = [];
  const wrapped = rows[0]?.wrapped_key;
  if (wrapped) {
    const key = ctx.keyring.unwrap(userId, wrapped);
    for (const r of rows) {
      const template = open(key, r.template_enc, `palm:${userId}:${r.id}`);
      entries.push({ palmId: r.id, userId, hand: r.hand, template: new Uint8Array(template) });
    }
  }
  ctx.gallery.removeUser(userId);
  let added = 0;
  for (const e of entries) if (!addPalm(ctx, e)) added++;
  return added;
}

/**
 * Keeps this instance's gallery in step with enrolments and erasures made on other instances (events from
 * this instance are skipped: it already changed its gallery). Events arriving while `ready` (the start-up
 * gallery load) is pending are queued and applied after it, so none is lost or applied twice.
 */
export function syncGalleryWithPeers(
  ctx: AppContext,
  ready: Promise<unknown>,
  onError: (err: unknown) => void,
): () => void {
  let chain: Promise<unknown> = ready.catch(() => undefined);
  const then = (step: () => unknown) => {
    // Serialised per instance: an add followed quickly by a remove must not be applied out of order.
    chain = chain.then(step).catch(onError);
  };
  const offChanged = ctx.events.subscribe('gallery.changed', (e, meta) => {
    if (meta.origin === ctx.events.instanceId) return;
    then(async () => {
      if (e.action === 'remove') ctx.gallery.removeUser(e.userId);
      else await loadUserPalms(ctx, e.userId);
    });
  });
  const offResync = ctx.events.onResync((lostAt) => then(() => catchUpGallery(ctx, lostAt - CLOCK_SKEW_MS)));
  return () => {
    offChanged();
    offResync();
  };
}

/** Margin for clocks of different instances (palm and erasure times are written by whichever instance). */
const CLOCK_SKEW_MS = 60_000;

/**
 * Applies to this instance's gallery every enrolment, palm removal and erasure the database recorded since `since`
 * (Unix ms): used when events from other instances may have been missed. Idempotent.
 */
export async function catchUpGallery(
  ctx: AppContext,
  since: number,
): Promise<{ removed: number; loaded: number }> {
  const store = userStore(ctx.database.db);
  const erased = await store.erasedSince(since);
  for (const id of erased) ctx.gallery.removeUser(id);
  const changed = await store.usersEnrolledSince(since);
  // palms removed since (no palm row is left to find): reload those users
  const lost = await store.palmsChangedSince(since);
  const reload = new Set([...changed, ...lost]);
  for (const id of reload) await loadUserPalms(ctx, id);
  return { removed: erased.length, loaded: reload.size };
}
