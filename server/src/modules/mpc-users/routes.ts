import {
  mpcCreateBodySchema,
  mpcCreatedSchema,
  mpcDeletedSchema,
  mpcReadSchema,
  mpcUpdateBodySchema,
  mpcUpdatedSchema,
  mpcUserRefSchema,
} from '@palmid/contracts/api/users';
import { pseudonym } from '@palmid/contracts/crypto/ids';
import { successSchema } from '@palmid/contracts/envelope';
import { AppError } from '@palmid/contracts/errors';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext, Caller, VendorPrincipal } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import { vendorErrors } from '../../lib/error-replies.ts';
import { callerOf, vendorOf } from '../../plugins/app/auth.ts';
import { ok } from '../../plugins/app/envelope.ts';
import { readAttributeValues, writeAttribute } from '../attributes/service.ts';
import { appendAudit } from '../audit/service.ts';
import { activeConsents } from '../consents/service.ts';
import { eraseUser } from '../gdpr/service.ts';
import { templateBytesFromBase64 } from '../matching/wire.ts';
import { findPvs } from '../pvs/service.ts';
import { forgetPalms } from '../users/gallery.ts';
import {
  auditPalm,
  auditRefusedPalm,
  confirmationRequired,
  consumePalmConfirmation,
  gateVendorPalms,
  serialiseEnrolment,
} from '../users/palms.ts';
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

const vendorRoute = { auth: 'vendor', scope: 'users', rate: 'users' } as const;
const security = [{ apiKey: [] }];

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

export const mpcUserRoutes: FastifyPluginAsyncZod = async (app) => {
  const ctx = app.ctx;

  app.post(
    '/api/v1/mpc/users/create',
    {
      config: vendorRoute,
      schema: {
        tags: ['users'],
        summary: 'Register a user (attributes and palm templates); a test key also receives a user token',
        security,
        body: mpcCreateBodySchema,
        response: { 201: successSchema(mpcCreatedSchema), ...vendorErrors(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const vendor = vendorOf(request);
      const { attributes, palms } = request.body;
      const create = async () => {
        // Palms of a new user: capture attestation by a device of this vendor, the enrolment budget and the
        // 1:N check first (docs/security.md).
        if (palms?.length) {
          await gateVendorPalms(ctx, {
            vendorId: vendor.id,
            caller: callerOf(request),
            palms: attested(palms),
            owner: null,
            device: (id) => findPvs(ctx.database.db, id),
          });
        }
        const out = await ctx.database.db.transaction().execute(async (trx) => {
          const user = await createUser(ctx, trx, vendor.id);
          const changes = await applyChanges(ctx, trx, vendor, callerOf(request), user.id, attributes, palms);
          const token = vendor.mode === 'test' ? await issueUserToken(ctx, trx, user.id) : undefined;
          const ledgerId = ledgerIdFor(ctx, await requireUser(trx, user.id), vendor.id);
          const scopedId = await vendorUserId(trx, vendor.id, user.id, ctx.now());
          return { user, changes, token, ledgerId, scopedId };
        });
        publishPalms(ctx, out.user.id, out.changes.palmIds);
        request.idempotencyUser = out.user.id; // a stored answer (Idempotency-Key) is sealed under their key
        return out;
      };
      const out = palms?.length ? await serialiseEnrolment(ctx, create) : await create();
      return ok(
        reply,
        {
          user_id: out.scopedId,
          pseudonym: pseudonym(out.user.id, vendor.id),
          ledger_id: out.ledgerId,
          ...(out.token ? { user_token: out.token.user_token, expires_at: out.token.expires_at } : {}),
        },
        201,
      );
    },
  );

  app.post(
    '/api/v1/mpc/users/update',
    {
      config: vendorRoute,
      schema: {
        tags: ['users'],
        summary: "Update attributes of a user you created, or add palms with the user's confirmation code",
        security,
        body: mpcUpdateBodySchema,
        response: { 200: successSchema(mpcUpdatedSchema), ...vendorErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const vendor = vendorOf(request);
      const { user_id, attributes, palms, confirmation_code } = request.body;
      const caller = callerOf(request);
      // Palms are added to an existing user only with the user's one-time code (docs/security.md).
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
        request.idempotencyUser = out.userId; // a stored answer (Idempotency-Key) is sealed under their key
        return out.changes;
      };
      const changes = palms?.length ? await serialiseEnrolment(ctx, update) : await update();
      return ok(reply, { user_id, updated: changes.updated });
    },
  );

  app.post(
    '/api/v1/mpc/users/read',
    {
      // a replayed read is answered as it would be now: a consent revoked since is honoured
      config: { ...vendorRoute, idempotency: 'rerun' },
      schema: {
        tags: ['users'],
        summary: 'Read a user you created: only the attributes the user consented to share with you',
        security,
        body: mpcUserRefSchema,
        response: { 200: successSchema(mpcReadSchema), ...vendorErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const vendor = vendorOf(request);
      const { user_id } = request.body;
      const data = await ctx.database.db.transaction().execute(async (trx) => {
        const user = await ownedUser(trx, vendor, user_id);
        const now = ctx.now();
        const consents = await activeConsents(trx, user.id, vendor.id, now);
        const values = await readAttributeValues(ctx, trx, user.id, [...consents.keys()], now, vendor.id);
        const attributes = Object.fromEntries(values);
        await appendAudit(
          trx,
          ctx.keyring,
          callerOf(request),
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
          user_id,
          pseudonym: pseudonym(user.id, vendor.id),
          ledger_id: ledgerIdFor(ctx, user, vendor.id),
          palm_registered: await palmRegistered(trx, user.id),
          registration_date: new Date(Number(user.registration_date)).toISOString(),
          attributes,
        };
      });
      return ok(reply, data);
    },
  );

  app.post(
    '/api/v1/mpc/users/delete',
    {
      config: vendorRoute,
      schema: {
        tags: ['users'],
        summary: 'Erase a user you created (same as the user’s own delete-me)',
        security,
        body: mpcUserRefSchema,
        response: { 200: successSchema(mpcDeletedSchema), ...vendorErrors(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const vendor = vendorOf(request);
      const { user_id } = request.body;
      const erased = await ctx.database.db.transaction().execute(async (trx) => {
        const owned = await ownedUser(trx, vendor, user_id);
        // the record first: the erasure then shreds its personal fields with the user's others
        await appendAudit(
          trx,
          ctx.keyring,
          callerOf(request),
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
      return ok(reply, { user_id, deleted: true as const });
    },
  );
};
