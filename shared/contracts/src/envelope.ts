import { z } from 'zod';
import { ERROR_CODES, type ErrorCode, type ErrorDetails } from './errors.ts';

/** Response envelopes (docs/vendor-api.md, "Envelopes and errors"). */
export const metaSchema = z.object({
  request_id: z.string(),
  timestamp: z.string(),
});
export type Meta = z.infer<typeof metaSchema>;

export const errorBodySchema = z.object({
  success: z.literal(false),
  error: z.object({
    code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
  }),
  meta: metaSchema,
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

export function successSchema<T extends z.ZodType>(data: T) {
  return z.object({ success: z.literal(true), data, meta: metaSchema });
}

export function successEnvelope<T>(data: T, meta: Meta): { success: true; data: T; meta: Meta } {
  return { success: true, data, meta };
}

export function errorEnvelope(
  code: ErrorCode,
  message: string,
  details: ErrorDetails,
  meta: Meta,
): ErrorBody {
  return { success: false, error: { code, message, details }, meta };
}

/** Error responses every user route can give, for OpenAPI. */
export const USER_ROUTE_ERRORS = {
  400: errorBodySchema,
  401: errorBodySchema,
  429: errorBodySchema,
  500: errorBodySchema,
} as const;
