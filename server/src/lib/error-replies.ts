import { errorBodySchema } from '@palmid/contracts/envelope';
import type { ErrorCode } from '@palmid/contracts/errors';

/**
 * Error replies of the vendor API for OpenAPI (docs/vendor-api.md "Errors"): the envelope every error
 * shares, with what each status means for a vendor and an example body. A route lists the statuses it
 * can give, e.g. `response: { 201: …, ...vendorErrors(400, 401, 403, 404, 429) }`.
 */
type Status = 400 | 401 | 403 | 404 | 429;

interface Example {
  description: string;
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

const EXAMPLES: Record<Status, Example> = {
  400: {
    description:
      'The body, path or query is invalid. `details.field` names the offending field (dotted path), `details.reason` says why; `message` is a sentence for a developer.',
    code: 'INVALID_REQUEST',
    message: 'Invalid auth_context.amount: amount is required for payment',
    details: { field: 'auth_context.amount', reason: 'required' },
  },
  401: {
    description:
      '`X-API-Key` is missing, malformed, revoked or rotated, or a live key used outside production (a test key in production). The reply is the same for every case but `details.reason`.',
    code: 'UNAUTHORIZED',
    message: 'Missing or invalid API key',
    details: { field: 'X-API-Key', reason: 'invalid' },
  },
  403: {
    description:
      "The key is valid but may not do this: it lacks the route's scope (`details.scope`), or the resource belongs to another vendor.",
    code: 'FORBIDDEN',
    message: "This API key lacks the 'auth' scope",
    details: { reason: 'missing_scope', scope: 'auth' },
  },
  404: {
    description:
      'Nothing of yours under this id: unknown, or another vendor’s (the two are not told apart). `details.hint` says which id a route expects where that is easy to mix up.',
    code: 'NOT_FOUND',
    message: 'No such authentication context',
    details: { field: 'auth_id', reason: 'unknown' },
  },
  429: {
    description:
      'Rate limit reached. Wait `details.retry_after_s` seconds (also in the `Retry-After` header); `X-RateLimit-*` headers carry the budget on every reply.',
    code: 'RATE_LIMITED',
    message: 'Too many requests',
    details: { reason: 'rate_limited', retry_after_s: 12 },
  },
};

const EXAMPLE_META = {
  request_id: 'req-1',
  timestamp: '2026-01-01T12:00:00.000Z',
};

export function errorReply(status: Status, example: Partial<Omit<Example, 'description'>> = {}) {
  const e = { ...EXAMPLES[status], ...example };
  return errorBodySchema.describe(EXAMPLES[status].description).meta({
    examples: [
      {
        success: false,
        error: { code: e.code, message: e.message, details: e.details },
        meta: EXAMPLE_META,
      },
    ],
  });
}

/** The listed statuses' error replies, for a route's `response` schema. */
export function vendorErrors(...statuses: Status[]): Record<Status, ReturnType<typeof errorReply>> {
  return Object.fromEntries(statuses.map((s) => [s, errorReply(s)])) as Record<
    Status,
    ReturnType<typeof errorReply>
  >;
}
