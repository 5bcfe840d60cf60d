import { z } from 'zod';
import { hex64Schema } from './common.ts';

const unixSeconds = z
  .string()
  .regex(/^\d{1,12}$/, 'must be an integer number of Unix seconds')
  .transform(Number);

export const ledgerParamsSchema = z.object({
  ledger_id: hex64Schema.describe(
    'The ledger id: auth_result.ledger_id of a completed payment (64 hex), not auth_result.user_id',
  ),
});
export const ledgerQuerySchema = z.object({
  from: unixSeconds.describe('Start of the range, Unix seconds'),
  to: unixSeconds
    .optional()
    .describe('End of the range, Unix seconds (default: now); at most 90 days after from'),
});
export const ledgerResponseSchema = z.object({
  transactions: z
    .array(z.string())
    .describe(
      'Each transaction as the hex of its UTF-8 JSON (user-id, context-id, attributes, vendor, timestamp, result), oldest first',
    ),
});
