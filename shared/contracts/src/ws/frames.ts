import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../errors.ts';

/** JSON text frames of both WebSocket channels (docs/websocket.md). Request ids are idempotency keys. */
export const MAX_FRAME_BYTES = 64 * 1024;
export const PING_INTERVAL_MS = 20_000;
export const CLOSE_POLICY = 1008;

export const requestIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,64}$/, 'must be 1–64 characters of [A-Za-z0-9._:-]');

export const requestFrameSchema = z
  .object({
    id: requestIdSchema,
    method: z.string().min(1).max(64),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export const notificationFrameSchema = z
  .object({ method: z.string().min(1).max(64), params: z.record(z.string(), z.unknown()).optional() })
  .strict();
export const errorObjectSchema = z.object({
  code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]),
  message: z.string(),
  details: z.record(z.string(), z.unknown()),
});
export const responseFrameSchema = z.union([
  z.object({ id: z.string(), result: z.unknown() }).strict(),
  z.object({ id: z.string().nullable(), error: errorObjectSchema }).strict(),
]);

export type RequestFrame = z.infer<typeof requestFrameSchema>;
export type NotificationFrame = z.infer<typeof notificationFrameSchema>;
export type ErrorObject = z.infer<typeof errorObjectSchema>;

export type IncomingFrame =
  | { kind: 'request'; frame: RequestFrame }
  | { kind: 'notification'; frame: NotificationFrame }
  | { kind: 'response'; id: string | null; result?: unknown; error?: ErrorObject }
  | { kind: 'invalid'; id: string | null; reason: string; field?: string };

let scratch: Uint8Array | undefined;
/**
 * Whether `text` is over MAX_FRAME_BYTES in UTF-8, in Node and in browsers (the console parses frames
 * too, and browsers have no Buffer). A UTF-16 code unit is 1–3 UTF-8 bytes, so only texts between
 * MAX/3 and MAX units are encoded, into one reused buffer: `encodeInto` stops where it is full.
 */
function tooLarge(text: string): boolean {
  if (text.length * 3 <= MAX_FRAME_BYTES) return false;
  if (text.length > MAX_FRAME_BYTES) return true;
  scratch ??= new Uint8Array(MAX_FRAME_BYTES);
  return new TextEncoder().encodeInto(text, scratch).read < text.length;
}

/** Classifies a text frame without throwing: malformed input becomes `invalid` with a reason. */
export function parseFrame(text: string): IncomingFrame {
  if (tooLarge(text)) return { kind: 'invalid', id: null, reason: 'frame_too_large' };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { kind: 'invalid', id: null, reason: 'malformed_json' };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return { kind: 'invalid', id: null, reason: 'not_an_object' };
  const obj = raw as Record<string, unknown>;
  const id = typeof obj.id === 'string' && requestIdSchema.safeParse(obj.id).success ? obj.id : null;
  if ('result' in obj || 'error' in obj) {
    const r = responseFrameSchema.safeParse(obj);
    if (!r.success) return { kind: 'invalid', id, reason: 'malformed_response' };
    return 'error' in r.data
      ? { kind: 'response', id: r.data.id, error: r.data.error }
      : { kind: 'response', id: r.data.id, result: r.data.result };
  }
  if ('id' in obj) {
    const r = requestFrameSchema.safeParse(obj);
    if (!r.success) {
      const issue = r.error.issues[0];
      return {
        kind: 'invalid',
        id,
        reason: issue?.code ?? 'invalid',
        field: issue?.path.join('.') || 'frame',
      };
    }
    return { kind: 'request', frame: r.data };
  }
  const n = notificationFrameSchema.safeParse(obj);
  if (!n.success) return { kind: 'invalid', id: null, reason: 'malformed_notification' };
  return { kind: 'notification', frame: n.data };
}
