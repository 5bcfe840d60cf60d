import fastJson from 'fast-json-stringify';
import { createSerializerCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';

type Serialize = (data: unknown) => string;
interface RouteSchema {
  schema: unknown;
  method: string;
  url: string;
  httpStatus?: string;
}

const zodSerializerCompiler = createSerializerCompiler({});

/** The zod schema of a response, as fastify-type-provider-zod accepts it (bare, or `{ properties }`). */
function zodSchemaOf(schema: unknown): z.ZodType | undefined {
  if (schema instanceof z.ZodType) return schema;
  const inner = (schema as { properties?: unknown } | null)?.properties;
  return inner instanceof z.ZodType ? inner : undefined;
}

/**
 * The response's serialiser compiled once from its schema (fast-json-stringify over the schema's JSON Schema
 * form), instead of a zod check of every response followed by `JSON.stringify` (docs/performance.md). The
 * output is the same bytes: only the schema's properties, in the schema's order, as zod's encode would keep.
 *
 * A schema that has no JSON Schema form (a transform, a custom check), or that fast-json-stringify cannot
 * compile, keeps zod's serialiser. With `check` (NODE_ENV=test), every response is also serialised the zod
 * way and must be byte-identical, so the whole test suite checks the compiled serialisers against zod (and
 * a response that zod would refuse, e.g. a wrong type or enum value, still fails there).
 */
export function responseSerializerCompiler(opts: { check: boolean }) {
  return (route: RouteSchema): Serialize => {
    const reference = zodSerializerCompiler(route as Parameters<typeof zodSerializerCompiler>[0]);
    const fast = compileEnvelope(route.schema) ?? compileFast(route.schema);
    if (!fast) return reference;
    if (!opts.check) return fast;
    return (data) => {
      const expected = reference(data);
      const actual = fast(data);
      if (actual !== expected) {
        throw new Error(
          `compiled serialiser of ${route.method} ${route.url} (${route.httpStatus ?? '?'}) differs from zod's:\n${actual}\n${expected}`,
        );
      }
      return actual;
    };
  };
}

/**
 * A success envelope (`{success, data, meta}`, shared/contracts/src/envelope.ts) compiled as its two parts, so that a
 * frozen `data` object answered to many requests (`GET /api/v1/status` keeps one per vendor and millisecond)
 * is serialised once: the JSON of the last frozen `data` is kept with it. Only frozen objects are reused (an
 * object that can change cannot be served from its earlier JSON). Same bytes as the whole envelope compiled
 * at once (the test suite's `check` compares every answer with zod's).
 */
export function compileEnvelope(schema: unknown): Serialize | undefined {
  const zod = zodSchemaOf(schema);
  if (!(zod instanceof z.ZodObject)) return undefined;
  const shape = zod.shape as Record<string, z.ZodType>;
  const keys = Object.keys(shape);
  if (keys.join() !== 'success,data,meta') return undefined;
  const success = shape.success;
  if (!(success instanceof z.ZodLiteral) || success.value !== true) return undefined;
  const data = compileFast(shape.data);
  const meta = compileFast(shape.meta);
  if (!data || !meta) return undefined;
  let lastData: unknown;
  let lastJson = '';
  return (envelope) => {
    const e = envelope as { data: unknown; meta: unknown };
    let json: string;
    if (e.data === lastData) json = lastJson;
    else {
      json = data(e.data);
      if (Object.isFrozen(e.data) && typeof e.data === 'object' && e.data !== null) {
        lastData = e.data;
        lastJson = json;
      }
    }
    return `{"success":true,"data":${json},"meta":${meta(e.meta)}}`;
  };
}

/** fast-json-stringify for a zod schema, or undefined when it has no faithful JSON Schema form. */
export function compileFast(schema: unknown): Serialize | undefined {
  const zod = zodSchemaOf(schema);
  if (!zod) return undefined;
  try {
    const json = z.toJSONSchema(zod, { io: 'output', target: 'draft-7', unrepresentable: 'throw' });
    keepPropertyOrder(json);
    return fastJson(json as Parameters<typeof fastJson>[0]) as Serialize;
  } catch {
    return undefined;
  }
}

/**
 * fast-json-stringify writes an object's required properties before its optional ones; zod (and the
 * OpenAPI schema) keep the declared order. Where an optional property comes before a required one, the
 * object's `required` list is dropped so that the declared order is kept (a missing property is then left
 * out instead of refused: the zod check under NODE_ENV=test still refuses it).
 */
function keepPropertyOrder(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) keepPropertyOrder(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const schema = node as { properties?: Record<string, unknown>; required?: string[] };
  if (schema.properties && schema.required) {
    const required = new Set(schema.required);
    const keys = Object.keys(schema.properties);
    const firstOptional = keys.findIndex((k) => !required.has(k));
    if (firstOptional >= 0 && keys.slice(firstOptional).some((k) => required.has(k))) delete schema.required;
  }
  for (const value of Object.values(node)) keepPropertyOrder(value);
}
