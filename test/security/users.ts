import { attestPalms, type TestDevice } from '@palmid/server/dev/testing';
import { expect } from 'vitest';
import { api } from '../e2e/harness.ts';
import { randomTemplate } from '../support/templates.ts';

/** User-side helpers of the security suites that run a real server process. */

/** The user API as the holder of `token` calls it. */
export function userApi(base: () => string) {
  return <
    T = { error?: { code?: string; details?: { field?: string; reason?: string } } } & {
      data: Record<string, unknown>;
    },
  >(
    token: string,
    method: string,
    path: string,
    body?: unknown,
  ) => api<T>(base(), method, path, { token, ...(body === undefined ? {} : { body }) });
}

/** A user the vendor creates with `attributes` and a random right palm attested by the vendor's capture host. */
export async function createUserWithPalm<
  D extends Record<string, unknown> = { user_id: string; user_token: string },
>(
  base: string,
  vendor: { api_key: string },
  host: TestDevice,
  attributes: Record<string, unknown> = {},
): Promise<D & { template: string }> {
  const template = randomTemplate();
  const res = await api<{ data: D }>(base, 'POST', '/api/v1/mpc/users/create', {
    key: vendor.api_key,
    body: { attributes, palms: attestPalms(host, [{ hand: 'right', template }]) },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { ...res.body.data, template };
}
