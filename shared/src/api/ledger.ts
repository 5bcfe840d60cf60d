import { z } from 'zod';
import { hex64Schema } from './common.ts';

const unixSeconds = z
  .string()
  .regex(/^\d{1,12}$/, 'must be an integer number of Unix seconds')
  .transform(Number);

export const ledgerParamsSchema = z.object({ user_id: hex64Schema });
export const ledgerQuerySchema = z.object({ from: unixSeconds, to: unixSeconds.optional() });
export const ledgerResponseSchema = z.object({ transactions: z.array(z.string()) });
