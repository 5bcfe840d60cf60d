import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, type TestApp } from '../../../dev/testing.ts';
import { type Call, expectError, userCaller } from '../../../dev/user-api-testkit.ts';

describe('GET /v1/audit', () => {
  let t: TestApp;
  let call: Call;
  let token = '';
  beforeAll(async () => {
    t = await createTestApp();
    call = userCaller(t, () => token);
  });
  afterAll(() => t.close());

  it("returns only the user's own records, newest first, honouring limit", async () => {
    const a = await seedUser(t.ctx);
    const b = await seedUser(t.ctx);
    token = a.token;
    for (const name of ['first_note', 'second_note', 'third_note'])
      await call({ method: 'PUT', url: `/v1/attributes/${name}`, payload: { value: name } });
    token = b.token;
    await call({ method: 'PUT', url: '/v1/attributes/b_note', payload: { value: 'b' } });

    token = a.token;
    const res = await call({ method: 'GET', url: '/v1/audit' });
    expect(res.statusCode).toBe(200);
    const records = res.json().data.records;
    expect(records.map((r: { attribute_name: string }) => r.attribute_name)).toEqual([
      'third_note',
      'second_note',
      'first_note',
    ]);
    expect(records[0]).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      timestamp: expect.any(String),
      user_id: a.userId,
      attribute_name: 'third_note',
      operation: 'UPDATE',
      ip_address: '127.0.0.1',
      user_agent: 'vitest',
      result: 'SUCCESS',
    });
    const limited = await call({ method: 'GET', url: '/v1/audit?limit=1' });
    expect(limited.json().data.records).toHaveLength(1);
  });

  it.each(['limit=0', 'limit=1001', 'limit=abc', 'limit=1.5', 'order=asc'])('rejects ?%s', async (q) => {
    const u = await seedUser(t.ctx);
    token = u.token;
    expectError(await call({ method: 'GET', url: `/v1/audit?${q}` }), 400, 'INVALID_REQUEST');
  });

  it('needs a token', async () => {
    expectError(
      await call({ method: 'GET', url: '/v1/audit', token: null }),
      401,
      'UNAUTHORIZED',
      'Authorization',
    );
  });
});
