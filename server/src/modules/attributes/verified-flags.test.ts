import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, type TestApp } from '../../../dev/testing.ts';
import { writeAttribute } from './service.ts';

/** A verified flag vouches for one value: when that value changes, the flag falls (docs/attributes.md). */
describe('verified flags fall when the value they vouch for changes', () => {
  let t: TestApp;
  let u: { userId: string; token: string };
  const call = (method: 'GET' | 'PUT', name: string, value?: unknown) =>
    t.app.inject({
      method,
      url: `/v1/attributes/${name}`,
      headers: { authorization: `Bearer ${u.token}` },
      ...(value === undefined ? {} : { payload: { value } }),
    });
  const trusted = (name: string, value: unknown) =>
    writeAttribute(
      t.ctx,
      t.ctx.database.db,
      u.userId,
      { name, value, verifiedBy: 'https://idp.example' },
      'trusted',
      Date.now(),
    );

  beforeAll(async () => {
    t = await createTestApp();
    u = await seedUser(t.ctx);
  });
  afterAll(() => t.close());

  it('email → email_verified', async () => {
    await trusted('email', 'ann@example.org');
    await trusted('email_verified', true);
    expect((await call('PUT', 'email', 'ann@example.org')).statusCode).toBe(200);
    expect((await call('GET', 'email_verified')).json().data.value).toBe(true);
    expect((await call('PUT', 'email', 'eve@example.org')).statusCode).toBe(200);
    expect((await call('GET', 'email_verified')).statusCode).toBe(404);
  });

  it('date_of_birth or legal_name → identity_verified', async () => {
    await trusted('date_of_birth', '1990-02-03');
    await trusted('legal_name', 'Ann Example');
    await trusted('identity_verified', true);
    expect((await call('PUT', 'date_of_birth', '1990-02-03')).statusCode).toBe(200);
    expect((await call('GET', 'identity_verified')).json().data.value).toBe(true);
    expect((await call('PUT', 'date_of_birth', '1980-02-03')).statusCode).toBe(200);
    expect((await call('GET', 'identity_verified')).statusCode).toBe(404);
    await trusted('identity_verified', true);
    await trusted('legal_name', 'Eve Example');
    expect((await call('GET', 'identity_verified')).statusCode).toBe(404);
  });
});
