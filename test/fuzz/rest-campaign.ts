import { errorBodySchema } from '@palmid/contracts/envelope';
import { createTestApp, seedUser, seedVendor, type TestApp } from '@palmid/server/dev/testing';
import { RateLimits } from '@palmid/server/lib/rate-limits';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { fromSchema, hostile, hostileScalar, mutate } from './arbitraries.ts';
import { enumerateRoutes, type RouteInfo } from './routes.ts';

/**
 * Schema-driven fuzzing of every REST route through `app.inject`: valid-shaped requests, requests with one
 * node replaced by a hostile value, hostile bodies, raw non-JSON bodies with wrong content types, bad path
 * and query parameters, bad credentials. Every answer must be < 500, carry no stack trace or source path,
 * and every error must be a SPEC error envelope.
 */
export interface RestFuzzFigures {
  routes: number;
  cases: number;
  byStatus: Record<string, number>;
  byKind: Record<string, number>;
}

const ROOT = new URL('../../', import.meta.url).pathname;
const LEAK = [
  /\n\s+at [^\n]*:\d+:\d+/,
  /node_modules/,
  /\.ts:\d+/,
  /SqliteError|SQLITE_|ZodError|TypeError|RangeError/,
];

/** Paths whose successful answers are not JSON envelopes by contract (documentation, web assets). */
const NON_ENVELOPE_OK = [/^\/docs/, /^\/web\//, /^\/portal$/, /^\/console$/, /^\/health$/];

/** encodeURIComponent throws on lone surrogates; those become the bytes a broken client would send. */
function enc(v: string): string {
  try {
    return encodeURIComponent(v);
  } catch {
    return '%ED%A0%80';
  }
}

interface Case {
  kind: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

const hostilePathSegment = fc.oneof(
  fc.constantFrom(
    '%00',
    '%ff',
    '%',
    '..',
    '%2e%2e%2f',
    '__proto__',
    'constructor',
    'x'.repeat(5000),
    '%F0%9F%98%80',
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    '-1',
    'NaN',
  ),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }).map(enc),
);

const contentTypes = fc.constantFrom(
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/xml',
  'application/jsonx',
  '',
  'application/json',
);

const rawBodies = fc.oneof(
  fc.constantFrom(
    '',
    '{',
    '{"a":',
    'null',
    '[]',
    '"str"',
    '1e400',
    '{"__proto__":{"admin":true}}',
    '{"a":1,"a":2}',
    '\u0000',
    '\ufeff{}',
    '<xml/>',
    'a=b&c=d',
    '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[',
  ),
  fc.integer({ min: 1000, max: 20000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constant('x'.repeat(1024 * 1024 + 10)),
);

export interface Credentials {
  vendorKey: string;
  userToken: string;
  noScopeKey: string;
}

function caseFor(route: RouteInfo, creds: () => Credentials): fc.Arbitrary<Case> {
  const pathParams = route.params.filter((p) => p.in === 'path');
  const queryParams = route.params.filter((p) => p.in === 'query');
  const validPath = fc.record(Object.fromEntries(pathParams.map((p) => [p.name, fromSchema(p.schema)])));
  const validQuery = fc.record(
    Object.fromEntries(queryParams.map((p) => [p.name, fromSchema(p.schema).map(String)])),
    { requiredKeys: queryParams.filter((p) => p.required).map((p) => p.name) },
  );
  const body = route.body ? fromSchema(route.body) : fc.constant(undefined);
  const kind = fc.constantFrom(
    'valid',
    'mutated',
    'hostile-body',
    'raw-body',
    'bad-path',
    'bad-query',
    'bad-auth',
  );
  return fc
    .record({
      kind,
      path: validPath,
      query: validQuery,
      body,
      hostile,
      hostileScalar,
      pick: fc.nat(),
      badSeg: hostilePathSegment,
      raw: rawBodies,
      ct: contentTypes,
      authVariant: fc.constantFrom('none', 'garbage', 'other', 'noscope', 'huge', 'bearer-lower'),
      extraQuery: fc.constantFrom(
        '__proto__[x]=1',
        'constructor=1',
        'from=1&from=2',
        'a=%00',
        'x=%ff',
        'z='.repeat(1),
      ),
    })
    .map((r): Case => {
      const c = creds();
      const headers: Record<string, string> = {};
      if (route.auth === 'vendor') headers['x-api-key'] = c.vendorKey;
      if (route.auth === 'user') headers.authorization = `Bearer ${c.userToken}`;
      const segs: Record<string, string> = Object.fromEntries(
        Object.entries(r.path).map(([k, v]) => [k, enc(String(v))]),
      );
      let query = new URLSearchParams(r.query as Record<string, string>).toString();
      let payload: string | undefined;
      const hasBody = !['GET', 'HEAD', 'DELETE'].includes(route.method);
      if (hasBody) {
        headers['content-type'] = 'application/json';
        payload = JSON.stringify(r.body ?? {});
      }
      switch (r.kind) {
        case 'mutated':
          if (hasBody) payload = JSON.stringify(mutate(r.body ?? {}, r.pick, r.hostile));
          else
            query = `${query}&${queryParams[r.pick % Math.max(1, queryParams.length)]?.name ?? 'q'}=${enc(String(r.hostileScalar))}`;
          break;
        case 'hostile-body':
          payload = JSON.stringify(r.hostile) ?? 'null';
          headers['content-type'] = 'application/json';
          break;
        case 'raw-body':
          payload = r.raw;
          if (r.ct) headers['content-type'] = r.ct;
          else delete headers['content-type'];
          break;
        case 'bad-path': {
          const name = pathParams[r.pick % Math.max(1, pathParams.length)]?.name;
          if (name) segs[name] = r.badSeg;
          break;
        }
        case 'bad-query':
          query = query ? `${query}&${r.extraQuery}` : r.extraQuery;
          break;
        case 'bad-auth':
          delete headers['x-api-key'];
          delete headers.authorization;
          if (r.authVariant === 'garbage') {
            headers['x-api-key'] = 'sk_test_garbage';
            headers.authorization = 'Bearer ut_garbage';
          } else if (r.authVariant === 'other') {
            // the other kind of credential: a user token on a vendor route and vice versa
            headers['x-api-key'] = c.userToken;
            headers.authorization = `Bearer ${c.vendorKey}`;
          } else if (r.authVariant === 'noscope') {
            headers['x-api-key'] = c.noScopeKey;
          } else if (r.authVariant === 'huge') {
            headers['x-api-key'] = `sk_test_${'A'.repeat(8000)}`;
            headers.authorization = `Bearer ${'B'.repeat(8000)}`;
          } else if (r.authVariant === 'bearer-lower') {
            headers.authorization = `bearer  ${c.userToken}\u0000`;
          }
          break;
      }
      const path = route.path.replace(/:(\w+)/g, (_, n: string) => segs[n] ?? 'x').replace('/*', '/x');
      return {
        kind: r.kind,
        method: route.method,
        url: query ? `${path}?${query}` : path,
        headers,
        ...(payload !== undefined ? { payload } : {}),
      };
    });
}

/** The checks every answer must pass; returns a description of the violation or null. */
export function checkAnswer(path: string, method: string, res: LightMyRequestResponse): string | null {
  if (res.statusCode >= 500) return `status ${res.statusCode}: ${res.body.slice(0, 300)}`;
  const text = res.body;
  const asset = NON_ENVELOPE_OK.some((re) => re.test(path));
  if (asset && res.statusCode < 400) return null;
  for (const re of LEAK) if (re.test(text)) return `leak ${re}: ${text.slice(0, 300)}`;
  if (text.includes(ROOT)) return `source path leaked: ${text.slice(0, 300)}`;
  if (method === 'HEAD') return null;
  const ct = String(res.headers['content-type'] ?? '');
  if (res.statusCode >= 400) {
    if (!ct.startsWith('application/json')) return `error with content-type ${ct}`;
    const parsed = errorBodySchema.safeParse(JSON.parse(text));
    if (!parsed.success) return `error is not an envelope: ${text.slice(0, 300)}`;
    if (res.headers['x-request-id'] !== parsed.data.meta.request_id) return 'X-Request-Id differs from meta';
    return null;
  }
  if (path.startsWith('/api/v1/ledger/')) return null;
  if (res.statusCode === 204) return null;
  if (!ct.startsWith('application/json')) return `success with content-type ${ct}`;
  const body = JSON.parse(text) as { success?: unknown; data?: unknown; meta?: unknown };
  if (body.success !== true || typeof body.data !== 'object' || typeof body.meta !== 'object')
    return `success is not an envelope: ${text.slice(0, 200)}`;
  return null;
}

export async function withFuzzApp<T>(fn: (t: TestApp, creds: () => Credentials) => Promise<T>): Promise<T> {
  const t = await createTestApp({ PALMID_ENV: 'sandbox' });
  // The fuzzer is not measuring rate limits (the abuse tests do): lift them so every case reaches the handler.
  const big = { points: 1e9, duration: 60 };
  t.ctx.rateLimits = new RateLimits(undefined, {
    auth: [big],
    users: [big],
    health: [big],
    ledger: [big],
    user: [big],
    status: [big],
    pvs: [big],
    session: [big],
    credentials: [big],
    enrol: [big],
  });
  try {
    const vendor = await seedVendor(t.ctx, 'Fuzz Vendor', ['auth', 'users']);
    const noScope = await seedVendor(t.ctx, 'No Scope', []);
    let user = await seedUser(t.ctx);
    let uses = 0;
    // seeding runs beside the cases; every pending seed is awaited before the database closes
    const seeding = new Set<Promise<unknown>>();
    const creds = (): Credentials => {
      // erasure routes revoke the token: a fresh user every 25 cases keeps most cases authenticated
      if (++uses % 25 === 0) {
        const p = seedUser(t.ctx).then((u) => {
          user = u;
        });
        seeding.add(p);
        void p.finally(() => seeding.delete(p));
      }
      return { vendorKey: vendor.api_key, userToken: user.token, noScopeKey: noScope.api_key };
    };
    try {
      return await fn(t, creds);
    } finally {
      await Promise.allSettled([...seeding]);
    }
  } finally {
    await t.close();
  }
}

export async function runRestFuzz(opts: { runsPerRoute: number; seed?: number }): Promise<RestFuzzFigures> {
  return withFuzzApp(async (t, creds) => {
    const routes = enumerateRoutes(t.app);
    const figures: RestFuzzFigures = { routes: routes.length, cases: 0, byStatus: {}, byKind: {} };
    for (const route of routes) {
      await fc.assert(
        fc.asyncProperty(caseFor(route, creds), async (c) => {
          const res = await t.app.inject({
            method: c.method as 'GET',
            url: c.url,
            headers: c.headers,
            ...(c.payload !== undefined ? { payload: c.payload } : {}),
          });
          figures.cases += 1;
          figures.byStatus[res.statusCode] = (figures.byStatus[res.statusCode] ?? 0) + 1;
          figures.byKind[c.kind] = (figures.byKind[c.kind] ?? 0) + 1;
          const problem = checkAnswer(c.url.split('?')[0]!, c.method, res);
          if (problem)
            throw new Error(`${c.method} ${route.path} [${c.kind}] ${c.url.slice(0, 200)}: ${problem}`);
          if (({} as Record<string, unknown>).polluted !== undefined) throw new Error('prototype polluted');
        }),
        {
          numRuns: opts.runsPerRoute,
          ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
          endOnFailure: true,
        },
      );
    }
    return figures;
  });
}
