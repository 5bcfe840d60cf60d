import { z } from 'zod';
import { AUTH_STATUSES, authResultSchema, PENDING_REASONS } from '../api/auth-contexts.ts';
import { uuidSchema } from '../api/common.ts';

/** /ws/vendor: server → vendor `auth.updated`; vendor → server `subscribe`, `ping` (docs/websocket.md). */
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
  /**
   * `step_up_required` (status `scanning`): the best candidate was plausible but not enough for the
   * whole gallery, and the kiosk asks the person for the other hand; the context stays open and
   * ends with the decision on both captures (docs/websocket.md "Step-up").
   */
  reason: z.enum(PENDING_REASONS).optional(),
});
export type AuthUpdated = z.infer<typeof authUpdatedSchema>;

/**
 * Browsers cannot set headers on a WebSocket, so a connection opened without `X-API-Key` must send this
 * as its first frame, `{id, method: 'auth', params: {api_key}}`, within the deadline. The key then
 * travels in the (TLS-protected) frame body, never in a URL that proxies and access logs record.
 */
export const VENDOR_AUTH_DEADLINE_MS = 5_000;
export const vendorAuthMethod = {
  params: z.object({ api_key: z.string().min(1).max(128) }).strict(),
  result: z.object({ vendor_id: z.string(), name: z.string(), mode: z.enum(['test', 'live']) }),
} as const;
