import type { mpcCreateBodySchema, mpcReadSchema, mpcUpdateBodySchema } from '@palmid/contracts/api/users';
import { pseudonym } from '@palmid/contracts/crypto/ids';
import { AppError } from '@palmid/contracts/errors';
import type { z } from 'zod';
import type { AppContext, Caller, VendorPrincipal } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { readAttributeValues, writeAttribute } from '../attributes/service.ts';
import { appendAudit } from '../audit/service.ts';
import { activeConsents } from '../consents/service.ts';
import { eraseUser } from '../gdpr/service.ts';
import { templateBytesFromBase64 } from '../matching/wire.ts';
import {
  auditPalm,
  auditRefusedPalm,
  confirmationRequired,
  consumePalmConfirmation,
  gateVendorPalms,
  serialiseEnrolment,
} from '../palms/service.ts';
import { findPvs } from '../pvs/service.ts';
import { forgetPalms } from '../users/gallery.ts';
import {
  addPalm,
  createUser,
  dataKeyOf,
  internalUserId,
  issueUserToken,
  ledgerIdFor,
  palmRegistered,
  requireUser,
  vendorUserId,
} from '../users/service.ts';

/**
 * The vendor's user management (docs/vendor-api.md, `/api/v1/mpc/users/*`): a vendor creates, updates,
 * reads and erases the users it created, through the users, attributes, consents, audit and gdpr services.
 */

function unknownUser(): AppError {
  return new AppError('NOT_FOUND', 'User not found', { field: 'user_id', reason: 'unknown' });
}

/**
 * The user behind a vendor-scoped id (docs/vendor-api.md, "User ids"). Only ids issued to this vendor
 * resolve: an internal id or an id issued to another vendor is the same 404 as an unknown one. Only the
 * vendor that created a user may manage it (else 403); others learn about users only through auth contexts.
 */
async function ownedUser(db: Db, vendor: VendorPrincipal, vendorUser: string) {
  const userId = await internalUserId(db, vendor.id, vendorUser);
  if (userId === undefined) throw unknownUser();
  const user = await requireUser(db, userId);
  if (user.created_by_vendor !== vendor.id) {
    throw new AppError('FORBIDDEN', 'This user was not created by your vendor account', {
      field: 'user_id',
      reason: 'not_owner',
    });
  }
  return user;
}

async function applyChanges(
  ctx: AppContext,
  db: Db,
  vendor: VendorPrincipal,
  caller: Caller,
  userId: string,
  attributes: Record<string, unknown> | undefined,
  palms: { hand: 'left' | 'right'; template: string }[] | undefined,
): Promise<{
  updated: string[];
  palmIds: { palmId: string; hand: 'left' | 'right'; template: Uint8Array }[];
}> {
  const now = ctx.now();
  const updated: string[] = [];
  for (const [name, value] of Object.entries(attributes ?? {})) {
    try {
      await writeAttribute(ctx, db, userId, { name, value }, 'user', now);
    } catch (err) {
      // Name the offending attribute in the request's own terms.
      if (err instanceof AppError)
        throw new AppError(err.code, err.message, { ...err.details, field: `attributes.${name}` });
      throw err;
    }
    updated.push(name);
  }
  const palmIds: { palmId: string; hand: 'left' | 'right'; template: Uint8Array }[] = [];
  if (palms && palms.length > 0) {
    const key = await dataKeyOf(ctx, db, userId);
    for (const p of palms) {
      const template = templateBytesFromBase64(p.template);
      palmIds.push({
        palmId: await addPalm(ctx, db, userId, key, { hand: p.hand, template }, `vendor:${vendor.id}`),
        hand: p.hand,
        template,
      });
    }
  }
  if (palmIds.length > 0) await auditPalm(ctx, db, caller, userId, vendor.id, 'SUCCESS');
  await appendAudit(
    db,
    ctx.keyring,
    caller,
    updated.map((name) => ({
      userId,
      vendorId: vendor.id,
      attributeName: name,
      operation: 'UPDATE' as const,
      result: 'SUCCESS' as const,
    })),
    now,
  );
  return { updated, palmIds };
}

/** The request's palms as attested captures (templates decoded; the signature covers the bytes). */
function attested<T extends { template: string }>(palms: T[]) {
  return palms.map((p) => ({ ...p, template: templateBytesFromBase64(p.template) }));
}

function publishPalms(
  ctx: AppContext,
  userId: string,
  palms: { palmId: string; hand: 'left' | 'right'; template: Uint8Array }[],
): void {
  for (const p of palms) ctx.gallery.add({ palmId: p.palmId, userId, hand: p.hand, template: p.template });
  if (palms.length > 0) ctx.events.publish('gallery.changed', { userId, action: 'add' });
}

/**
 * `POST /api/v1/mpc/users/create`: a new user with attributes and palms. Palms of a new user are checked
 * first (capture attestation by a device of this vendor, the enrolment budget and the 1:N check:
 * docs/security.md); then one transaction; then the palms join the gallery. A test key also gets a token.
 */
export async function createMpcUser(
  ctx: AppContext,
  vendor: VendorPrincipal,
  caller: Caller,
  body: z.infer<typeof mpcCreateBodySchema>,
) {
  const { attributes, palms } = body;
  const create = async () => {
    if (palms?.length) {
      await gateVendorPalms(ctx, {
        vendorId: vendor.id,
        caller,
        palms: attested(palms),
        owner: null,
        device: (id) => findPvs(ctx.database.db, id),
      });
    }
    const out = await ctx.database.db.transaction().execute(async (trx) => {
      const user = await createUser(ctx, trx, vendor.id);
      const changes = await applyChanges(ctx, trx, vendor, caller, user.id, attributes, palms);
      const token = vendor.mode === 'test' ? await issueUserToken(ctx, trx, user.id) : undefined;
      const ledgerId = ledgerIdFor(ctx, await requireUser(trx, user.id), vendor.id);
      const scopedId = await vendorUserId(trx, vendor.id, user.id, ctx.now());
      return { user, changes, token, ledgerId, scopedId };
    });
    publishPalms(ctx, out.user.id, out.changes.palmIds);
    return out;
  };
  const out = palms?.length ? await serialiseEnrolment(ctx, create) : await create();
  return {
    /** the internal id: a stored answer (Idempotency-Key) is sealed under this user's key */
    userId: out.user.id,
    created: {
      user_id: out.scopedId,
      pseudonym: pseudonym(out.user.id, vendor.id),
      ledger_id: out.ledgerId,
      ...(out.token ? { user_token: out.token.user_token, expires_at: out.token.expires_at } : {}),
    },
  };
}

/**
 * `POST /api/v1/mpc/users/update`: attributes of a user the vendor created, and palms added only with the
 * user's one-time code (docs/security.md; without it the refusal is audited).
 */
export async function updateMpcUser(
  ctx: AppContext,
  vendor: VendorPrincipal,
  caller: Caller,
  body: z.infer<typeof mpcUpdateBodySchema>,
) {
  const { user_id, attributes, palms, confirmation_code } = body;
  if (palms?.length && confirmation_code === undefined) {
    const owned = await ownedUser(ctx.database.db, vendor, user_id);
    await auditRefusedPalm(ctx, caller, owned.id, vendor.id);
    throw confirmationRequired();
  }
  const update = async () => {
    if (palms?.length) {
      const owned = await ownedUser(ctx.database.db, vendor, user_id);
      await gateVendorPalms(ctx, {
        vendorId: vendor.id,
        caller,
        palms: attested(palms),
        owner: owned.id,
        device: (id) => findPvs(ctx.database.db, id),
      });
    }
    const out = await ctx.database.db.transaction().execute(async (trx) => {
      const owned = await ownedUser(trx, vendor, user_id);
      if (palms?.length && confirmation_code !== undefined)
        await consumePalmConfirmation(ctx, trx, confirmation_code, owned.id);
      return {
        userId: owned.id,
        changes: await applyChanges(ctx, trx, vendor, caller, owned.id, attributes, palms),
      };
    });
    publishPalms(ctx, out.userId, out.changes.palmIds);
    return out;
  };
  const out = palms?.length ? await serialiseEnrolment(ctx, update) : await update();
  return { userId: out.userId, updated: out.changes.updated };
}

/** `POST /api/v1/mpc/users/read`: only the attributes the user consented to share with the vendor (audited). */
export async function readMpcUser(
  ctx: AppContext,
  vendor: VendorPrincipal,
  caller: Caller,
  vendorUser: string,
): Promise<z.infer<typeof mpcReadSchema>> {
  return ctx.database.db.transaction().execute(async (trx) => {
    const user = await ownedUser(trx, vendor, vendorUser);
    const now = ctx.now();
    const consents = await activeConsents(trx, user.id, vendor.id, now);
    const values = await readAttributeValues(ctx, trx, user.id, [...consents.keys()], now, vendor.id);
    const attributes = Object.fromEntries(values);
    await appendAudit(
      trx,
      ctx.keyring,
      caller,
      [...values.keys()].map((name) => ({
        userId: user.id,
        vendorId: vendor.id,
        attributeName: name,
        operation: 'READ' as const,
        result: 'SUCCESS' as const,
      })),
      now,
    );
    return {
      user_id: vendorUser,
      pseudonym: pseudonym(user.id, vendor.id),
      ledger_id: ledgerIdFor(ctx, user, vendor.id),
      palm_registered: await palmRegistered(trx, user.id),
      registration_date: new Date(Number(user.registration_date)).toISOString(),
      attributes,
    };
  });
}

/** `POST /api/v1/mpc/users/delete`: erases a user the vendor created (as the user's own delete-me). */
export async function deleteMpcUser(
  ctx: AppContext,
  vendor: VendorPrincipal,
  caller: Caller,
  vendorUser: string,
): Promise<void> {
  const erased = await ctx.database.db.transaction().execute(async (trx) => {
    const owned = await ownedUser(trx, vendor, vendorUser);
    // the record first: the erasure then shreds its personal fields with the user's others
    await appendAudit(
      trx,
      ctx.keyring,
      caller,
      [
        {
          userId: owned.id,
          vendorId: vendor.id,
          attributeName: '*',
          operation: 'DELETE',
          result: 'SUCCESS',
        },
      ],
      ctx.now(),
    );
    await eraseUser(ctx, trx, owned.id);
    return owned.id;
  });
  forgetPalms(ctx, erased);
}
