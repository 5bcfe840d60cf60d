import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedVendor, type TestApp } from '../../../dev/testing.ts';
import { jsonErrorOffset } from './errors.ts';

/** Errors that say what to do (issue 27): where JSON broke, where the API key goes, which methods a path takes. */
describe('errors that point the way', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp({ PALMID_ENV: 'sandbox' });
    key = (await seedVendor(t.ctx)).api_key;
  });
  afterAll(() => t.close());

  it('finds the first offending character of invalid JSON', () => {
    expect(jsonErrorOffset('{"a": }')).toBe(6);
    expect(jsonErrorOffset('{"a":1,}')).toBe(7);
    expect(jsonErrorOffset('{"a":\n tru}')).toBe(10);
    expect(jsonErrorOffset('[1,2')).toBe(4); // ends too early: the end is where it broke
    expect(jsonErrorOffset('{"a": 1} x')).toBe(9);
  });

  it('a malformed body says where, in the message and the details', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/create',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      payload: '{"auth_context": {\n  "type": "login",\n  "amount": 12,5\n}}',
    });
    expect(res.statusCode).toBe(400);
    const { message, details } = res.json().error;
    expect(details).toEqual({ field: 'body', reason: 'malformed_json', position: 53, line: 3, column: 16 });
    expect(message).toMatch(/^Malformed JSON body at position 53 \(line 3, column 16\): /);
    expect(message).not.toContain('"type"'); // no echo of the body
  });

  it('an API key sent as Authorization: Bearer gets a hint to use X-API-Key', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/status',
      headers: { authorization: `Bearer ${key}` },
    });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.message).toMatch(/X-API-Key header/);
    expect(res.json().error.details).toMatchObject({ field: 'X-API-Key', reason: 'missing' });
    expect(res.body).not.toContain(key);
    // with the key where it belongs, the Authorization header does not matter
    const fine = await t.app.inject({
      method: 'GET',
      url: '/api/v1/status',
      headers: { authorization: 'Bearer sk_test_x', 'x-api-key': key },
    });
    expect(fine.statusCode).toBe(200);
  });

  it('a wrong method on a known path stays 404 but names the methods in Allow and the message', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/auth/create' });
    expect(res.statusCode).toBe(404);
    expect(res.headers.allow).toBe('POST');
    expect(res.json().error).toMatchObject({
      code: 'NOT_FOUND',
      message: 'No route GET /api/v1/auth/create: this path takes POST',
      details: { reason: 'method_not_allowed', allowed: ['POST'] },
    });
    const status = await t.app.inject({
      method: 'DELETE',
      url: '/api/v1/auth/0f8e6c52-8a1b-4b5e-9c1d-1234567890ab/status',
    });
    expect(status.headers.allow).toBe('GET, HEAD');
    const hook = await t.app.inject({ method: 'PUT', url: '/api/v1/webhooks/wh_1' });
    expect(hook.headers.allow).toBe('DELETE');
    const unknown = await t.app.inject({ method: 'POST', url: '/api/v1/nothing-here' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers.allow).toBeUndefined();
    expect(unknown.json().error.details).toEqual({ reason: 'no_route' });
  });
});
