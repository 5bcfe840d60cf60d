import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApp } from './testing.ts';

/** Test helpers shared by the user-API route tests (attributes, consents, audit, GDPR, session). */

export type Call = (opts: InjectOptions & { token?: string | null }) => Promise<LightMyRequestResponse>;

/** Injects a request with a bearer token (null: none) and a fixed user agent. */
export function userCaller(t: TestApp, defaultToken: () => string): Call {
  return (opts) => {
    const { token = defaultToken(), ...rest } = opts;
    return t.app.inject({
      ...rest,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        'user-agent': 'vitest',
        ...(rest.headers ?? {}),
      },
    });
  };
}

interface ErrorBody {
  success: boolean;
  error: { code: string; details: { field?: string; reason?: string } };
  meta: { request_id: string };
}

export function expectError(
  res: LightMyRequestResponse,
  status: number,
  code: string,
  field?: string,
  reason?: string,
): void {
  expect(res.statusCode).toBe(status);
  const body = res.json() as ErrorBody;
  expect(body.success).toBe(false);
  expect(body.error.code).toBe(code);
  expect(body.meta.request_id).toBe(res.headers['x-request-id']);
  if (field !== undefined) expect(body.error.details.field).toBe(field);
  if (reason !== undefined) expect(body.error.details.reason).toBe(reason);
}
