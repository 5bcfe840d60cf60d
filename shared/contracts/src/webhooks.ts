import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed webhooks (docs/vendor-api.md, "Webhooks"): every delivery is a POST of `{id, type, created, data}`
 * with the header `Palmid-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
 */
export const SIGNATURE_HEADER = 'Palmid-Signature';
/** Receivers reject a signature whose `t` is further than this from their clock. */
export const SIGNATURE_TOLERANCE_S = 300;
/**
 * The event types an endpoint can subscribe to: `auth.created` (a context was created: `{auth_id, status:
 * "pending"}`), `auth.updated` (it changed state: `{auth_id, status, auth_result?}`, as on /ws/vendor).
 */
export const WEBHOOK_EVENTS = ['auth.created', 'auth.updated'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number];

export function signatureHeader(secret: string, rawBody: string, t: number): string {
  const v1 = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex');
  return `t=${t},v1=${v1}`;
}

/**
 * Checks a `Palmid-Signature` header against the raw body as received: true when one `v1` matches and `t`
 * is within `toleranceS` of `nowS`. Constant-time comparison.
 */
export function verifySignature(
  secret: string,
  rawBody: string,
  header: string | undefined,
  nowS = Math.floor(Date.now() / 1000),
  toleranceS = SIGNATURE_TOLERANCE_S,
): boolean {
  if (!header) return false;
  let t: number | undefined;
  const sigs: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.split('=', 2).map((s) => s.trim());
    if (k === 't' && v && /^\d+$/.test(v)) t = Number(v);
    else if (k === 'v1' && v) sigs.push(v);
  }
  if (t === undefined || Math.abs(nowS - t) > toleranceS) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex'));
  return sigs.some((s) => {
    const got = Buffer.from(s);
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}
