import { z } from 'zod';
import { WEBHOOK_EVENTS } from '../webhooks.ts';

/** docs/vendor-api.md, "Webhooks". */
export const webhookCreateBodySchema = z
  .object({
    url: z
      .string()
      .min(1)
      .max(2048)
      .describe('https:// URL on a public address (development also takes http:// to a loopback address)'),
    events: z
      .array(z.string().min(1).max(64))
      .min(1)
      .max(16)
      .optional()
      .describe(`Event types to receive (default: all, ${WEBHOOK_EVENTS.join(', ')})`),
  })
  .strict();

export const webhookEndpointSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  created_at: z.string(),
});

export const webhookCreatedSchema = webhookEndpointSchema.extend({
  secret: z.string().describe('The signing secret (whsec_…), shown only in this answer: store it now'),
});

export const webhookIdParamsSchema = z.object({ id: z.string().min(1).max(64) });

export const webhookDeliverySchema = z.object({
  id: z.string().describe('delivery id (whd_…): one event to one endpoint'),
  event_id: z.string().describe('the `id` of the POSTed event (evt_…); a replay keeps it'),
  endpoint_id: z.string(),
  type: z.string(),
  auth_id: z.string(),
  state: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  created_at: z.string(),
  next_attempt_at: z.string().nullable(),
  last_attempt_at: z.string().nullable(),
  last_status: z.number().int().nullable().describe("the endpoint's HTTP status at the last attempt"),
  last_error: z.string().nullable(),
  delivered_at: z.string().nullable(),
  replay_of: z.string().nullable(),
});

export const webhookDeliveriesQuerySchema = z
  .object({
    endpoint_id: z.string().min(1).max(64).optional(),
    auth_id: z.string().min(1).max(64).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
  })
  .strict();
