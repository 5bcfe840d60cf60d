import type { AuthContextInput, oneShotAuthBodySchema } from '@palmid/contracts/api/auth-contexts';
import type { FastifyBaseLogger } from 'fastify';
import type { z } from 'zod';
import type { AppContext, AuthHistoryItem, Caller, VendorPrincipal } from '../../context.ts';
import type { Db } from '../../db/index.ts';
import type { DirectLockout } from '../devices/direct-lockout.ts';
import { checkAttestation } from '../devices/service.ts';
import { lockoutOutcome } from '../lockouts/service.ts';
import { templateBytesFromBase64 } from '../matching/wire.ts';
import { findPvs } from '../pvs/service.ts';
import { type Resolution, resolve, resolved as resolvedOnly } from './resolve.ts';
import {
  type AuthContext,
  cancelAuthContext,
  createAuthContext,
  dispatchToKiosks,
  publishUpdate,
  readResult,
  withdrawFromKiosks,
} from './state.ts';
import { authContextStore } from './store.ts';

/**
 * The auth-contexts service: the vendor's calls on contexts (docs/vendor-api.md) that routes.ts parses and
 * answers: create and offer to kiosks, cancel and withdraw, and the direct path that creates and resolves
 * a context with a palm in one call. Its parts: the state machine (state.ts, over store.ts), the pure
 * decisions (decide.ts, age.ts) and `resolve` (resolve.ts); other modules call those directly.
 */

/**
 * Resolved authentications attributed to a user (input of the computed risk_score, modules/attributes,
 * which gets it as AppContext.authHistory: bootstrap.ts).
 */
export async function authHistory(db: Db, userId: string, sinceMs: number): Promise<AuthHistoryItem[]> {
  return authContextStore(db).history(userId, sinceMs);
}

/**
 * `POST /api/v1/auth/create`: the context is created by a group commit (db/group-commit.ts: answered once
 * durably committed, one flush for concurrent creates), then offered to the kiosks that serve it.
 */
export async function createAndOffer(
  ctx: AppContext,
  vendor: VendorPrincipal,
  input: AuthContextInput,
): Promise<AuthContext> {
  const row = await ctx.database.write((trx, batch) => createAuthContext(ctx, trx, vendor, input, batch));
  dispatchToKiosks(ctx, row);
  return row;
}

/** `POST /api/v1/auth/{id}/cancel`: cancelled, the vendor told, the kiosks' offer withdrawn. */
export async function cancelAndWithdraw(ctx: AppContext, vendorId: string, authId: string) {
  const row = await ctx.database.db
    .transaction()
    .execute((trx) => cancelAuthContext(ctx, trx, vendorId, authId));
  publishUpdate(ctx, row, readResult(ctx, row));
  withdrawFromKiosks(ctx, row);
  return row;
}

const evidenceOf = (s: {
  template: Uint8Array;
  hand?: 'left' | 'right' | undefined;
  liveness?: number | undefined;
}) => ({
  template: s.template,
  hand: s.hand,
  liveness: s.liveness,
});

/**
 * `POST /api/v1/auth`: creates and resolves a context with palm captures in one call (integrators running
 * their own agent). Only a palm attested by a capture device of this vendor is believed
 * (docs/vendor-api.md); several captures are attested together (one subject, increasing counters) and
 * judged as one. Failed identifications lock out per capture device and per API key
 * (modules/devices/direct-lockout.ts).
 */
export async function resolveDirect(
  ctx: AppContext,
  q: {
    vendor: VendorPrincipal;
    caller: Caller;
    body: z.infer<typeof oneShotAuthBodySchema>;
    lockout: DirectLockout;
    log: Pick<FastifyBaseLogger, 'warn'>;
  },
): Promise<Resolution> {
  const { vendor, lockout } = q;
  const { auth_context, palm, captures } = q.body;
  const palms = captures ?? (palm ? [palm] : []);
  const samples = palms.map((p, i) => ({
    ...p,
    template: templateBytesFromBase64(p.template, captures ? `captures.${i}.template` : 'palm.template'),
  }));
  const capture = await checkAttestation(ctx, {
    purpose: 'direct',
    vendorId: vendor.id,
    device: (id) => findPvs(ctx.database.db, id),
    samples,
  });
  if (!capture.ok) q.log.warn({ why: capture.why }, 'direct capture refused');
  const settle = capture.ok ? await lockout.admit(capture.deviceId, vendor.keyId, ctx.now()) : undefined;
  let failed: boolean | undefined;
  let resolved: Resolution;
  try {
    resolved = resolvedOnly(
      await resolve(ctx, {
        palm: { ...evidenceOf(samples[0]!), capture },
        more: samples.slice(1).map(evidenceOf),
        caller: q.caller,
        deliveredNow: true,
        // Created after the capture checks (a bad template creates nothing), committed before proving.
        context: () =>
          ctx.database.db.transaction().execute((trx) => createAuthContext(ctx, trx, vendor, auth_context)),
      }),
    );
    failed = lockoutOutcome(resolved.result.reason, resolved.context.userId);
  } finally {
    // Recorded before the answer leaves: a caller that reads no_match and retries at once, on this
    // instance or another, already meets the count (and the lock) this attempt left.
    await settle?.(failed);
  }
  return resolved;
}
