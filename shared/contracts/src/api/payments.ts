import { z } from 'zod';

/** One payment of the user's, from the ledger (docs/user-api.md, "Payments"). */
export const paymentSchema = z.object({
  context_id: z.string(),
  vendor_id: z.string(),
  amount: z.number().int().describe("In the currency's smallest unit (cents for EUR)"),
  currency: z
    .string()
    .nullable()
    .describe('ISO 4217 code; null where neither the ledger nor the context still records it'),
  result: z.string().describe('"ok", or the reason the payment failed (e.g. "insufficient_consent")'),
  timestamp: z.string().describe('ISO 8601'),
});

export const paymentsQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(500).optional().describe('At most this many (default 100)'),
  })
  .strict();

export const paymentsListSchema = z.object({ payments: z.array(paymentSchema) });
export type Payment = z.infer<typeof paymentSchema>;
