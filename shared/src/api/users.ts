import { z } from 'zod';
import { attributeNameSchema, handSchema, hex64Schema, templateB64Schema, uuidSchema } from './common.ts';
import { palmConfirmationCodeSchema } from './palms.ts';

/** Vendor-side user management (docs/vendor-api.md, "User management": /api/v1/mpc/users/*). */
const attributesMap = z
  .record(attributeNameSchema, z.unknown())
  .refine((m) => Object.keys(m).length <= 32, 'at most 32 attributes per request');
const palms = z.array(z.object({ hand: handSchema, template: templateB64Schema }).strict()).max(10);

export const mpcCreateBodySchema = z
  .object({ attributes: attributesMap.optional(), palms: palms.optional() })
  .strict();
export const mpcUpdateBodySchema = z
  .object({
    user_id: uuidSchema,
    attributes: attributesMap.optional(),
    palms: palms.optional(),
    /** Required with `palms`: the user's one-time code from `POST /v1/palms/confirm`. */
    confirmation_code: palmConfirmationCodeSchema.optional(),
  })
  .strict();
export const mpcUserRefSchema = z.object({ user_id: uuidSchema }).strict();

export const mpcCreatedSchema = z.object({
  user_id: z.string(),
  pseudonym: hex64Schema,
  ledger_id: hex64Schema,
  user_token: z.string().optional(),
  expires_at: z.string().optional(),
});
export const mpcUpdatedSchema = z.object({ user_id: z.string(), updated: z.array(z.string()) });
export const mpcReadSchema = z.object({
  user_id: z.string(),
  pseudonym: hex64Schema,
  ledger_id: hex64Schema,
  palm_registered: z.array(handSchema),
  registration_date: z.string(),
  attributes: z.record(z.string(), z.unknown()),
});
export const mpcDeletedSchema = z.object({ user_id: z.string(), deleted: z.literal(true) });
