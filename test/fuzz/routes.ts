import type { FastifyInstance } from 'fastify';
import type { JsonSchema } from './arbitraries.ts';

export interface RouteInfo {
  method: string;
  /** Fastify path, e.g. `/api/v1/auth/:auth_id/status`. */
  path: string;
  params: { name: string; in: 'path' | 'query'; required: boolean; schema: JsonSchema }[];
  body?: JsonSchema;
  /** Credential the route expects, from its OpenAPI security (or its prefix when hidden from OpenAPI). */
  auth: 'vendor' | 'user' | 'none';
}

/**
 * Every route the app serves, read from the app itself (`printRoutes`), so a route added later is fuzzed
 * without anyone remembering to list it. Schemas come from the OpenAPI document generated from the zod
 * schemas; a route hidden from OpenAPI is still fuzzed with hostile input only.
 */
export function enumerateRoutes(app: FastifyInstance): RouteInfo[] {
  const tree = app.printRoutes({ commonPrefix: false });
  const stack: string[] = [];
  const found: { method: string; path: string }[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    const segment = m[2]!;
    stack.length = depth;
    const parent = stack[depth - 1] ?? '';
    const full = segment === '*' ? `${parent}/*` : `${parent}${segment}`;
    stack[depth] = full;
    for (const method of (m[3] ?? '').split(',').map((s) => s.trim())) {
      if (method) found.push({ method, path: full || '/' });
    }
  }
  const spec = app.swagger() as {
    paths: Record<
      string,
      Record<
        string,
        {
          parameters?: { name: string; in: string; required?: boolean; schema: JsonSchema }[];
          requestBody?: { content?: Record<string, { schema: JsonSchema }> };
          security?: Record<string, unknown>[];
        }
      >
    >;
  };
  return found.map(({ method, path }) => {
    const oaPath = path.replace(/:(\w+)/g, '{$1}');
    const op = spec.paths[oaPath]?.[method.toLowerCase()] ?? spec.paths[oaPath]?.get;
    const security = op?.security?.[0];
    const auth: RouteInfo['auth'] = security
      ? 'apiKey' in security
        ? 'vendor'
        : 'bearer' in security
          ? 'user'
          : 'none'
      : path.startsWith('/api/v1/') && path !== '/api/v1/keys/zk'
        ? 'vendor'
        : path.startsWith('/v1/') && !path.startsWith('/v1/session') && !path.startsWith('/v1/vendors')
          ? 'user'
          : 'none';
    const params = (op?.parameters ?? [])
      .filter((p) => p.in === 'path' || p.in === 'query')
      .map((p) => ({ name: p.name, in: p.in as 'path' | 'query', required: !!p.required, schema: p.schema }));
    for (const name of path.match(/:(\w+)/g) ?? []) {
      if (!params.some((p) => p.name === name.slice(1)))
        params.push({ name: name.slice(1), in: 'path', required: true, schema: { type: 'string' } });
    }
    const body = op?.requestBody?.content?.['application/json']?.schema;
    return { method, path, params, ...(body ? { body } : {}), auth };
  });
}
