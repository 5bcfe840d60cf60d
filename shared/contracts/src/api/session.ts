import { z } from 'zod';

export const sessionBodySchema = z
  .object({
    claim_code: z
      .string()
      .min(1)
      .max(32)
      .describe('The one-time code shown on the kiosk after enrolment, e.g. ABCDE-23456'),
  })
  .strict();

export const sessionResponseSchema = z.object({
  user_id: z.string(),
  user_token: z.string(),
  expires_at: z.string(),
});
