import { z } from 'zod';
import { captureAttestationSchema } from '../capture/schema.ts';
import { attributeNameSchema, handSchema, hex64Schema, templateB64Schema, uuidSchema } from './common.ts';
import { palmConfirmationCodeSchema } from './palms.ts';

/** Vendor-side user management (docs/vendor-api.md, "User management": /api/v1/mpc/users/*). */
/** Every `user_id` here is the id issued to the calling vendor for the user (docs/vendor-api.md, "User ids"). */
const vendorUserIdSchema = z
  .string()
  .describe('Your id for the user: a UUID v4 issued to your vendor account (never the internal id)');
const attributesMap = z
  .record(attributeNameSchema, z.unknown())
  .refine((m) => Object.keys(m).length <= 32, 'at most 32 attributes per request');
/**
 * A palm of a user the vendor registers: believed only when a capture device registered to the vendor
 * attested it (purpose `register`, docs/vendor-api.md "Attested palms"); liveness is part of what is signed.
 */
const palms = z
  .array(
    z
      .object({
        hand: handSchema,
        template: templateB64Schema,
        quality: z.number().min(0).max(1).optional(),
        liveness: z.number().min(0).max(1).optional(),
        attestation: captureAttestationSchema.optional(),
      })
      .strict(),
  )
  .max(10);

export const mpcCreateBodySchema = z
  .object({ attributes: attributesMap.optional(), palms: palms.optional() })
  .strict();
export const mpcUpdateBodySchema = z
  .object({
    user_id: uuidSchema.describe('Your id for the user, as mpc/users/create returned it'),
    attributes: attributesMap.optional(),
    palms: palms.optional(),
    /** Required with `palms`: the user's one-time code from `POST /v1/palms/confirm`. */
    confirmation_code: palmConfirmationCodeSchema.optional(),
  })
  .strict();
export const mpcUserRefSchema = z
  .object({ user_id: uuidSchema.describe('Your id for the user, as mpc/users/create returned it') })
  .strict();

export const mpcCreatedSchema = z.object({
  user_id: vendorUserIdSchema,
  pseudonym: hex64Schema,
  ledger_id: hex64Schema,
  user_token: z.string().optional(),
  expires_at: z.string().optional(),
});
export const mpcUpdatedSchema = z.object({ user_id: vendorUserIdSchema, updated: z.array(z.string()) });
export const mpcReadSchema = z.object({
  user_id: vendorUserIdSchema,
  pseudonym: hex64Schema,
  ledger_id: hex64Schema,
  palm_registered: z.array(handSchema),
  registration_date: z.string(),
  attributes: z.record(z.string(), z.unknown()),
});
export const mpcDeletedSchema = z.object({ user_id: vendorUserIdSchema, deleted: z.literal(true) });
