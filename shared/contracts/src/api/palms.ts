import { z } from 'zod';
import { uuidSchema } from './common.ts';

/**
 * Palm confirmation (docs/security.md, "Palms belong to their owner"): a palm is added to an existing user
 * only with a one-time code the user gets from `POST /v1/palms/confirm`, valid 10 minutes.
 */
export const palmConfirmationCodeSchema = z
  .string()
  .min(1)
  .max(32)
  .describe('One-time code from POST /v1/palms/confirm, e.g. ABCDE-23456 (valid 10 minutes)');

export const palmConfirmationSchema = z.object({
  confirmation_code: z.string(),
  expires_at: z.string(),
});

/** `GET /v1/palms` (docs/user-api.md, "Palms"): the user's enrolled palms, never their templates. */
export const palmItemSchema = z.object({
  palm_id: z.string(),
  hand: z.enum(['left', 'right']),
  enrolled_at: z.string().describe('ISO 8601 UTC'),
  where: z
    .object({
      kind: z.enum(['kiosk', 'vendor', 'unknown']),
      id: z.string().nullable(),
      name: z.string().nullable(),
    })
    .describe(
      'where the palm was enrolled: a kiosk, a vendor (its capture host), or unknown (before this was recorded)',
    ),
});
export type PalmItem = z.infer<typeof palmItemSchema>;

export const palmListSchema = z.object({ palms: z.array(palmItemSchema) });

export const palmIdParamsSchema = z.object({ palm_id: uuidSchema }).strict();

export const palmRemovedSchema = z.object({ palm_id: z.string(), removed: z.literal(true) });

/** `DELETE /v1/tokens/current`, `DELETE /v1/tokens`: how many tokens were revoked. */
export const tokensRevokedSchema = z.object({ revoked: z.number().int().nonnegative() });
