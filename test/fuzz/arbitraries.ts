import fc from 'fast-check';

/**
 * fast-check arbitraries derived from the OpenAPI (JSON Schema) the app publishes from its zod schemas, so a
 * schema change changes what the fuzzer sends; plus hostile values that no schema allows.
 */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  nullable?: boolean;
}

/** Values that break naive parsers, validators and serializers. */
export const hostileScalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    0,
    -1,
    -0,
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER + 2,
    5e-324,
    0.1,
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff\ud800',
    '\u202eevil',
    '😀'.repeat(40),
    'Ω≈ç√∫',
    '../../../../etc/passwd',
    "' OR 1=1 --",
    '<script>alert(1)</script>',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a log-injection probe, sent literally
    '${jndi:ldap://x}',
    '%00',
    '__proto__',
    'constructor',
    'toString',
    'NaN',
    'Infinity',
    '1e400',
    '9'.repeat(400),
    'x'.repeat(70_000),
    true,
    false,
    null,
    [],
    {},
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.double(),
  fc.integer(),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((b) => Number(b)),
);

/** A prototype-pollution probe, deep nesting, or a wide object. */
export const hostileStructure: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(JSON.parse('{"__proto__":{"polluted":true,"admin":true}}')),
  fc.constant(JSON.parse('{"constructor":{"prototype":{"polluted":true}}}')),
  fc.integer({ min: 50, max: 3000 }).map((depth) => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
    return v;
  }),
  fc
    .integer({ min: 200, max: 3000 })
    .map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))),
  fc.integer({ min: 200, max: 5000 }).map((n) => Array.from({ length: n }, () => 'aa')),
);

export const hostile: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: hostileScalar },
  hostileStructure,
);

function regexOf(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern);
  } catch {
    return undefined;
  }
}

/** An arbitrary of (mostly) valid values for a JSON Schema; `depth` bounds recursion. */
export function fromSchema(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return fc.jsonValue({ maxDepth: 2 });
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives && alternatives.length > 0)
    return fc.oneof(...alternatives.map((s) => fromSchema(s, depth + 1)));
  if (schema.allOf?.[0]) return fromSchema(schema.allOf[0], depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const base = ((): fc.Arbitrary<unknown> => {
    switch (type) {
      case 'string': {
        if (schema.format === 'uuid') return fc.uuid({ version: 4 });
        if (schema.format === 'date-time')
          return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
        if (schema.format === 'email') return fc.emailAddress();
        const re = schema.pattern ? regexOf(schema.pattern) : undefined;
        if (re && schema.pattern!.length < 200) return fc.stringMatching(re);
        return fc.string({
          minLength: schema.minLength ?? 0,
          maxLength: Math.min(schema.maxLength ?? 40, 80),
        });
      }
      case 'integer':
        return fc.integer({
          min: Math.max(schema.minimum ?? -1e9, -Number.MAX_SAFE_INTEGER),
          max: Math.min(schema.maximum ?? 1e9, Number.MAX_SAFE_INTEGER),
        });
      case 'number':
        return fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true });
      case 'boolean':
        return fc.boolean();
      case 'null':
        return fc.constant(null);
      case 'array':
        return fc.array(fromSchema(schema.items, depth + 1), {
          minLength: schema.minItems ?? 0,
          maxLength: Math.min(schema.maxItems ?? 5, 5),
        });
      case 'object': {
        const props = schema.properties ?? {};
        const required = new Set(schema.required ?? []);
        const record: Record<string, fc.Arbitrary<unknown>> = {};
        for (const [k, s] of Object.entries(props)) record[k] = fromSchema(s, depth + 1);
        const known = fc.record(record, { requiredKeys: [...required].filter((k) => k in record) });
        if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
          return fc
            .tuple(
              known,
              fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/), fc.jsonValue({ maxDepth: 1 }), {
                maxKeys: 4,
              }),
            )
            .map(([a, b]) => ({ ...b, ...a }));
        return known;
      }
      default:
        return fc.jsonValue({ maxDepth: 2 });
    }
  })();
  return schema.nullable ? fc.option(base, { nil: null }) : base;
}

/** Replaces one randomly chosen node of a value (or adds one key) with a hostile value. */
export function mutate(value: unknown, pick: number, replacement: unknown): unknown {
  const nodes: { parent: Record<string, unknown> | unknown[]; key: string | number }[] = [];
  const walk = (v: unknown, d: number) => {
    if (d > 8 || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        nodes.push({ parent: v, key: i });
        walk(item, d + 1);
      });
    } else {
      for (const k of Object.keys(v)) {
        nodes.push({ parent: v as Record<string, unknown>, key: k });
        walk((v as Record<string, unknown>)[k], d + 1);
      }
    }
  };
  const copy = structuredClone(value);
  walk(copy, 0);
  if (nodes.length === 0) return replacement;
  const target = nodes[pick % nodes.length]!;
  if (Array.isArray(target.parent)) target.parent[target.key as number] = replacement;
  else if (pick % 5 === 0)
    Object.defineProperty(target.parent, `${String(target.key)}_x`, { value: replacement, enumerable: true });
  else target.parent[target.key as string] = replacement;
  return copy;
}
