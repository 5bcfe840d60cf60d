import { authStatusSchema } from '@palmid/contracts/api/auth-contexts';
import { errorBodySchema, successSchema } from '@palmid/contracts/envelope';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileEnvelope, compileFast, responseSerializerCompiler } from './serializer.ts';

const meta = { request_id: 'r-1', timestamp: '2026-01-01T00:00:00.000Z' };
const route = (schema: unknown) => ({ schema, method: 'GET', url: '/x', httpStatus: '200' });

/** The compiled response serialisers give zod's bytes (plugins/app/serializer.ts). */
describe('responseSerializerCompiler', () => {
  const statusSchema = successSchema(
    z.object({
      auth_id: z.string(),
      status: z.enum(['pending', 'completed']),
      note: z.string().optional(),
      pvs_id: z.string().nullable(),
      tags: z.array(z.object({ k: z.string(), n: z.number().int() })),
    }),
  );

  it('compiles the envelopes and a status schema', () => {
    expect(compileFast(statusSchema)).toBeTypeOf('function');
    expect(compileFast(successSchema(authStatusSchema))).toBeTypeOf('function');
    expect(compileFast(errorBodySchema)).toBeTypeOf('function');
  });

  it('compiles a success envelope in two parts with the same bytes, reusing only a frozen data object', () => {
    const envelope = compileEnvelope(statusSchema);
    const whole = compileFast(statusSchema);
    if (!envelope || !whole) throw new Error('not compiled');
    expect(compileEnvelope(errorBodySchema)).toBeUndefined();
    const data = { auth_id: 'a-1', status: 'pending', pvs_id: null, tags: [{ k: 'x', n: 1 }] };
    expect(envelope({ success: true, data, meta })).toBe(whole({ success: true, data, meta }));
    // not frozen: serialised again each time, so a change shows
    data.status = 'completed';
    expect(JSON.parse(envelope({ success: true, data, meta })).data.status).toBe('completed');
    // frozen: one JSON for every answer that carries it, each with its own meta
    const frozen = Object.freeze({ ...data, tags: Object.freeze([Object.freeze({ k: 'y', n: 2 })]) });
    const first = envelope({ success: true, data: frozen, meta });
    const other = { request_id: 'r-2', timestamp: '2026-01-01T00:00:00.001Z' };
    const second = envelope({ success: true, data: frozen, meta: other });
    expect(first).toBe(whole({ success: true, data: frozen, meta }));
    expect(second).toBe(whole({ success: true, data: frozen, meta: other }));
  });

  it("writes zod's bytes: schema order, unknown keys dropped, optional keys left out, null kept", () => {
    const serialize = responseSerializerCompiler({ check: true })(route(statusSchema));
    const data = {
      meta,
      data: {
        tags: [{ n: 3, k: 'a"b\u2028', extra: 1 }],
        pvs_id: null,
        status: 'pending',
        auth_id: 'id-1',
        secret: 'never written',
      },
      success: true,
    };
    const out = serialize(data);
    expect(out).toBe(
      '{"success":true,"data":{"auth_id":"id-1","status":"pending","pvs_id":null,"tags":[{"k":"a\\"b\u2028","n":3}]},"meta":{"request_id":"r-1","timestamp":"2026-01-01T00:00:00.000Z"}}',
    );
    expect(out).toBe(responseSerializerCompiler({ check: false })(route(statusSchema))(data));
  });

  it('keeps the declared order when an optional property comes before required ones', () => {
    const schema = z.object({ id: z.string(), vendor_id: z.string().optional(), name: z.string() });
    const serialize = responseSerializerCompiler({ check: true })(route(schema));
    expect(serialize({ name: 'n', vendor_id: 'v', id: 'a' })).toBe('{"id":"a","vendor_id":"v","name":"n"}');
    expect(serialize({ name: 'n', id: 'a' })).toBe('{"id":"a","name":"n"}');
  });

  it('writes error envelopes with their free-form details', () => {
    const serialize = responseSerializerCompiler({ check: true })(route(errorBodySchema));
    const body = {
      success: false,
      error: { code: 'RATE_LIMITED', message: 'Too many', details: { retry_after_s: 3, nested: { a: [1] } } },
      meta,
    };
    expect(JSON.parse(serialize(body))).toEqual(body);
  });

  it('in check mode, refuses a response that zod refuses (wrong enum value)', () => {
    const serialize = responseSerializerCompiler({ check: true })(route(statusSchema));
    const bad = {
      success: true,
      data: { auth_id: 'x', status: 'bogus', pvs_id: null, tags: [] },
      meta,
    };
    expect(() => serialize(bad)).toThrow();
  });

  it('keeps zod for a schema with no JSON Schema form', () => {
    const custom = z.object({ v: z.custom<string>((x) => typeof x === 'string') });
    expect(compileFast(custom)).toBeUndefined();
    const serialize = responseSerializerCompiler({ check: false })(route(custom));
    expect(serialize({ v: 'a', w: 1 })).toBe('{"v":"a"}');
  });
});
