import { CATALOGUE } from '@palmid/contracts/api/attribute-catalogue';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, seedUser, seedVendor, type TestApp } from '../../../dev/testing.ts';
import { issueUserToken } from '../users/service.ts';

/**
 * Arbitrary input through HTTP: whatever arrives, the answer is a well-formed envelope with a SPEC code,
 * never a 500, and a refused write leaves nothing behind.
 */
describe('user API under arbitrary input', () => {
  let t: TestApp;
  let userId = '';
  let vendorId = '';
  const fresh = async () => (await issueUserToken(t.ctx, t.ctx.database.db, userId)).user_token;

  beforeAll(async () => {
    t = await createTestApp();
    userId = (await seedUser(t.ctx)).userId;
    vendorId = (await seedVendor(t.ctx, 'Fuzz Shop')).vendor_id;
  });
  afterAll(() => t.close());

  const names = fc.oneof(
    fc.constantFrom(...Object.keys(CATALOGUE)),
    fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/),
  );

  it('PUT /v1/attributes/{name} answers 200, 400 or 403, and only 200 changes anything', async () => {
    await fc.assert(
      fc.asyncProperty(
        names,
        fc.oneof(
          fc.record(
            {
              value: fc.jsonValue(),
              encrypted: fc.boolean(),
              valid_from: fc.oneof(
                fc.constant(null),
                fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
              ),
              valid_until: fc.oneof(
                fc.constant(null),
                fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
              ),
            },
            { requiredKeys: [] },
          ),
          fc.jsonValue(),
        ),
        async (name, body) => {
          const token = await fresh();
          const headers = { authorization: `Bearer ${token}` };
          const before = await t.app.inject({ method: 'GET', url: `/v1/attributes/${name}`, headers });
          const res = await t.app.inject({
            method: 'PUT',
            url: `/v1/attributes/${name}`,
            headers: { ...headers, 'content-type': 'application/json' },
            payload: JSON.stringify(body),
          });
          expect([200, 400, 403]).toContain(res.statusCode);
          const json = res.json();
          expect(json.success).toBe(res.statusCode === 200);
          if (res.statusCode !== 200) {
            expect(json.error.details.field).toBeTruthy();
            const after = await t.app.inject({ method: 'GET', url: `/v1/attributes/${name}`, headers });
            if (CATALOGUE[name as keyof typeof CATALOGUE]?.kind !== 'computed')
              expect(after.body.replace(/"request_id":"[^"]+","timestamp":"[^"]+"/, '')).toBe(
                before.body.replace(/"request_id":"[^"]+","timestamp":"[^"]+"/, ''),
              );
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('POST /v1/consents answers 201, 400 or 404 and never half-writes', async () => {
    const valid = {
      vendor_id: vendorId,
      attributes: [{ name: 'email', purpose: 'receipts', retention_days: 30 }],
    };
    const mutated = fc.oneof(
      fc.jsonValue(),
      fc.record(
        { ...Object.fromEntries(Object.keys(valid).map((k) => [k, fc.jsonValue()])) },
        { requiredKeys: [] },
      ),
      fc.record(
        {
          vendor_id: fc.oneof(fc.constant(vendorId), fc.uuid(), fc.string()),
          attributes: fc.array(
            fc.record(
              {
                name: fc.oneof(names, fc.string()),
                purpose: fc.string({ maxLength: 600 }),
                retention_days: fc.oneof(fc.integer({ min: -5, max: 4000 }), fc.double()),
              },
              { requiredKeys: [] },
            ),
            { maxLength: 70 },
          ),
          expires_at: fc.oneof(
            fc.string(),
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          ),
          revocable: fc.jsonValue(),
        },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(mutated, async (body) => {
        const token = await fresh();
        const headers = { authorization: `Bearer ${token}` };
        const count = async () =>
          (await t.app.inject({ method: 'GET', url: '/v1/consents?all=true', headers })).json().data.consents
            .length as number;
        const before = await count();
        const res = await t.app.inject({
          method: 'POST',
          url: '/v1/consents',
          headers: { ...headers, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });
        expect([201, 400, 404]).toContain(res.statusCode);
        expect(await count()).toBe(before + (res.statusCode === 201 ? 1 : 0));
      }),
      { numRuns: 100 },
    );
  });

  it('POST /v1/session never answers other than 400 or 401 for junk', async () => {
    let ip = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue(), fc.record({ claim_code: fc.jsonValue() })), async (body) => {
        ip += 1;
        const res = await t.app.inject({
          method: 'POST',
          url: '/v1/session',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(body),
          remoteAddress: `10.1.${ip >> 8}.${ip & 255}`,
        });
        expect([400, 401]).toContain(res.statusCode);
        expect(res.json().success).toBe(false);
      }),
      { numRuns: 100 },
    );
  });
});
