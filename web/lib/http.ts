/** A failed call: the SPEC error envelope, or a network failure mapped onto it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly reason?: string,
    readonly response?: Response,
  ) {
    super(message);
  }
}

export interface RateBudget {
  limit: number;
  remaining: number;
  resetAt: Date;
}

export interface Reply<T> {
  data: T;
  response: Response;
}

interface ErrorBody {
  success: false;
  error: { code: string; message: string; details?: { field?: unknown; reason?: unknown } };
}

function isErrorBody(x: unknown): x is ErrorBody {
  return typeof x === 'object' && x !== null && (x as { success?: unknown }).success === false;
}

export function rateBudgetOf(response: Response): RateBudget | undefined {
  const limit = Number(response.headers.get('X-RateLimit-Limit'));
  const remaining = Number(response.headers.get('X-RateLimit-Remaining'));
  const reset = Number(response.headers.get('X-RateLimit-Reset'));
  if (!response.headers.has('X-RateLimit-Limit') || !Number.isFinite(limit)) return undefined;
  return { limit, remaining, resetAt: new Date(reset * 1000) };
}

/**
 * Calls the JSON API with the caller's credentials in a header (never in the URL), unwraps the success
 * envelope, and turns an error envelope into an ApiError carrying details.field/reason for inline display.
 */
export async function call<T>(
  path: string,
  headers: Record<string, string>,
  init: { method?: string; body?: unknown; raw?: boolean } = {},
): Promise<Reply<T>> {
  let response: Response;
  try {
    response = await fetch(path, {
      method: init.method ?? 'GET',
      headers: {
        ...headers,
        Accept: 'application/json',
        ...(init.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The server could not be reached. Check your connection and try again.');
  }
  const body: unknown = await response.json().catch(() => undefined);
  if (!response.ok || isErrorBody(body)) {
    const e = isErrorBody(body) ? body.error : undefined;
    const field = typeof e?.details?.field === 'string' ? e.details.field : undefined;
    const reason = typeof e?.details?.reason === 'string' ? e.details.reason : undefined;
    throw new ApiError(
      response.status,
      e?.code ?? 'INTERNAL_ERROR',
      e?.message ?? `The server answered ${response.status}`,
      field,
      reason,
      response,
    );
  }
  const data = init.raw ? body : (body as { data: unknown }).data;
  return { data: data as T, response };
}
