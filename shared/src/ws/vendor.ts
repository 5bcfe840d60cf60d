import { z } from 'zod';
import { AUTH_STATUSES, authResultSchema } from '../api/auth-contexts.ts';
import { uuidSchema } from '../api/common.ts';

/** /ws/vendor: server → vendor `auth.updated`; vendor → server `subscribe`, `ping` (CONTRACT §6). */
export const vendorMethods = {
  subscribe: {
    params: z.object({ auth_id: uuidSchema }).strict(),
    result: z.object({
      auth_id: z.string(),
      status: z.enum(AUTH_STATUSES),
      auth_result: authResultSchema.optional(),
    }),
  },
  ping: {
    params: z.object({}).strict(),
    result: z.object({ pong: z.literal(true), time: z.string() }),
  },
} as const;

export type VendorMethod = keyof typeof vendorMethods;

export const authUpdatedSchema = z.object({
  auth_id: z.string(),
  status: z.enum(AUTH_STATUSES),
  auth_result: authResultSchema.optional(),
});
export type AuthUpdated = z.infer<typeof authUpdatedSchema>;
