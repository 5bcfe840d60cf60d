import { errorBodySchema } from '@palmid/contracts/envelope';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';

/**
 * The error envelope's safety net (plugins/app/errors.ts) is attached only to routes without a response
 * schema: the routes plugins add (the socket routes' plain-HTTP handler) keep it, the API routes answer
 * their errors through the error handler without it. Every error answer must still be an envelope whose
 * `meta.request_id` is the `X-Request-Id` header.
 */
describe('error envelopes', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const envelope = (res: { statusCode: number; headers: Record<string, unknown>; body: string }) => {
    const body = errorBodySchema.parse(JSON.parse(res.body));
    expect(body.meta.request_id).toBe(res.headers['x-request-id']);
    return body;
  };

  it('a plain GET on a WebSocket route (the plugin answers 404 without a body) gets the envelope', async () => {
    for (const url of ['/ws/vendor', '/ws/pvs']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(envelope(res).error.code).toBe('NOT_FOUND');
    }
  });

  it('API routes (response schema, no safety net) still answer every error with the envelope', async () => {
    const v = await seedVendor(t.ctx, 'Errors');
    const cases = [
      { method: 'GET' as const, url: '/api/v1/status', headers: {}, status: 401, code: 'UNAUTHORIZED' },
      {
        method: 'GET' as const,
        url: '/api/v1/auth/00000000-0000-4000-8000-000000000000/status',
        headers: { 'x-api-key': v.api_key },
        status: 404,
        code: 'NOT_FOUND',
      },
      {
        method: 'POST' as const,
        url: '/api/v1/auth/create',
        headers: { 'x-api-key': v.api_key, 'content-type': 'application/json' },
        payload: '{"auth_context":',
        status: 400,
        code: 'INVALID_REQUEST',
      },
      { method: 'GET' as const, url: '/no/such/route', headers: {}, status: 404, code: 'NOT_FOUND' },
    ];
    for (const c of cases) {
      const res = await t.app.inject(c);
      expect(res.statusCode, c.url).toBe(c.status);
      expect(envelope(res).error.code, c.url).toBe(c.code);
    }
  });

  it('a successful answer keeps its body and its request id', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/health',
      headers: { 'x-request-id': 'trace-1.a_b' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBe('trace-1.a_b');
    expect(res.json()).toMatchObject({ status: 'ok' });
  });
});
