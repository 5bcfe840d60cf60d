import { z } from 'zod';

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
