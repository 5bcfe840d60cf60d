import { passesLiveness } from '@palmid/contracts/capture/liveness';
import { AppError } from '@palmid/contracts/errors';
import type { pvsMethods } from '@palmid/contracts/ws/pvs';
import type { FastifyBaseLogger } from 'fastify';
import type { z } from 'zod';
import type { AppContext, Caller } from '../../context.ts';
import { auditAttestationFailure, checkAttestation } from '../devices/service.ts';
import { templateBytesFromBase64 } from '../matching/wire.ts';
import {
  admitEnrolment,
  alreadyEnrolled,
  auditPalm,
  auditRefusedPalm,
  consumePalmConfirmation,
  findEnrolledElsewhere,
  serialiseEnrolment,
} from '../palms/service.ts';
import type { PvsPrincipal } from '../pvs/service.ts';
import { addPalm, createClaimCode, createUser, dataKeyOf } from '../users/service.ts';
import { recallAnswer, rememberAnswer } from './idempotency.ts';

type EnrolParams = z.infer<(typeof pvsMethods)['enroll']['params']>;
type EnrolAnswer = z.infer<(typeof pvsMethods)['enroll']['result']>;

/**
 * `enroll` at a kiosk (docs/security.md, "Palms belong to their owner"): without a confirmation code, a
 * kiosk without a vendor enrols a new user (claim code); with the user's code from `POST /v1/palms/confirm`,
 * any kiosk adds the palms to that user. Replays of the same request id get the stored answer; otherwise
 * the samples' capture attestation is checked, the enrolment counts against the kiosk's budget, and palms that match another user's are refused.
 */
export async function enrolAtKiosk(
  ctx: AppContext,
  pvs: PvsPrincipal,
  params: EnrolParams,
  requestId: string,
  caller: Caller,
  log: Pick<FastifyBaseLogger, 'warn'>,
): Promise<EnrolAnswer> {
  const code = params.confirmation_code;
  if (code === undefined && pvs.vendorId !== null) {
    throw new AppError('FORBIDDEN', 'Only kiosks without a vendor enrol new users', {
      reason: 'vendor_kiosk',
    });
  }
  const samples = [params, ...(params.samples ?? [])];
  for (const s of samples) {
    if (!passesLiveness(s.liveness))
      throw new AppError('INVALID_REQUEST', 'A sample failed the liveness check', {
        field: 'liveness',
        reason: 'liveness_failed',
      });
  }
  const templates = samples.map((s) => ({
    hand: s.hand,
    template: templateBytesFromBase64(s.template, 'template'),
  }));
  for (const t of templates) ctx.matcher.validate(t.template);
  const key = `pvs:${pvs.id}:enroll:${requestId}`;
  const replay = await recallAnswer(ctx, ctx.database.db, key);
  if (replay) return replay as EnrolAnswer;
  // Every enrolment, a new user or a palm added with a code, is attested by this kiosk's capture device
  // (docs/security.md): a retried request got its stored answer above, its nonce being spent.
  const capture = await checkAttestation(ctx, {
    purpose: 'enroll',
    deviceId: pvs.id,
    samples: samples.map((s, i) => ({ ...s, template: templates[i]!.template })),
  });
  if (!capture.ok) {
    log.warn({ why: capture.why }, 'enrolment capture refused');
    await auditAttestationFailure(ctx, ctx.database.db, caller, capture, null, ctx.now());
    throw new AppError('FORBIDDEN', 'The capture attestation was refused', {
      field: 'attestation',
      reason: 'attestation_failed',
    });
  }
  await admitEnrolment(ctx, `pvs:${pvs.id}`);

  return serialiseEnrolment(ctx, async () => {
    let refusedFor: string | undefined;
    try {
      const { answer, userId, added } = await ctx.database.db.transaction().execute(async (trx) => {
        const previous = await recallAnswer(ctx, trx, key);
        if (previous) return { answer: previous as EnrolAnswer, userId: '', added: [] };
        const owner = code === undefined ? null : await consumePalmConfirmation(ctx, trx, code);
        const elsewhere = findEnrolledElsewhere(
          ctx,
          templates.map((t) => t.template),
          owner,
        );
        if (elsewhere) {
          refusedFor = elsewhere;
          throw alreadyEnrolled('template');
        }
        let userId: string;
        let dataKey: Buffer;
        let answer: EnrolAnswer;
        if (owner === null) {
          const user = await createUser(ctx, trx, null);
          const claim = await createClaimCode(ctx, trx, user.id);
          userId = user.id;
          dataKey = user.dataKey;
          answer = { user_id: user.id, claim_code: claim.claim_code, expires_at: claim.expires_at };
        } else {
          userId = owner;
          dataKey = await dataKeyOf(ctx, trx, owner);
          answer = { added: true, hands: [...new Set(templates.map((t) => t.hand))] };
        }
        const palms = [];
        for (const t of templates)
          palms.push({
            ...t,
            userId,
            palmId: await addPalm(ctx, trx, userId, dataKey, t, `kiosk:${pvs.id}`),
          });
        await auditPalm(ctx, trx, caller, userId, pvs.vendorId, 'SUCCESS');
        await rememberAnswer(ctx, trx, key, answer, { userId, dataKey });
        return { answer, userId, added: palms };
      });
      for (const p of added) ctx.gallery.add(p);
      if (added.length > 0) ctx.events.publish('gallery.changed', { userId, action: 'add' });
      return answer;
    } catch (err) {
      if (refusedFor) await auditRefusedPalm(ctx, caller, refusedFor, pvs.vendorId);
      throw err;
    }
  });
}
