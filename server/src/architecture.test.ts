import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The server's architecture, checked over its sources (docs/architecture.md): which module owns which
 * table, the layers, no import cycle, and at most a few imports from a lower layer back up. A new file
 * must be placed in a layer here; a new table must be given an owner.
 */

const SRC = dirname(fileURLToPath(import.meta.url));

/** Module → the tables only its files may name in SQL. `db/` (schema, migrations) names them all. */
const OWNERS: Record<string, readonly string[]> = {
  vendors: ['vendors', 'api_keys'],
  users: ['users', 'user_tokens', 'claim_codes', 'palms', 'palm_confirmations', 'vendor_user_ids'],
  attributes: ['attributes'],
  consents: ['consents'],
  'auth-contexts': ['auth_contexts'],
  ledger: ['ledger'],
  audit: ['audit', 'audit_head'],
  pvs: ['pvs'],
  'kiosk-link': ['idempotency', 'kiosk_lockouts'],
  devices: ['capture_keys', 'capture_nonces'],
  webhooks: ['webhook_endpoints', 'webhook_deliveries'],
  verification: [
    'verifiers',
    'zk_openings',
    'attestations',
    'auth_context_predicates',
    'oidc_nonces',
    'oidc_subjects',
    'in_set_asks',
  ],
};

/**
 * Layers, lowest first; a file may import its own layer and those below. Paths are relative to
 * server/src; the first rule that matches a file places it (edges are listed first so that a module's
 * routes sit above its service).
 */
const LAYERS = ['foundation', 'store', 'domain', 'orchestration', 'http', 'edge'] as const;
type Layer = (typeof LAYERS)[number];
const RULES: [RegExp, Layer][] = [
  // edges: HTTP and WebSocket routes, request helpers, composition, processes, test kits
  [/(^|\/|-)routes\.ts$/, 'edge'],
  [/^modules\/auth-contexts\/ws\.ts$/, 'edge'],
  [/^modules\/attributes\/audit\.ts$/, 'edge'],
  [/testkit\.ts$/, 'edge'],
  [/^(app|server|main|demo|demo-palm|sim-kiosk|testing)\.ts$/, 'edge'],
  [/^cli\//, 'edge'],
  // Fastify plugins: authentication, rate limits, errors, envelope
  [/^plugins\//, 'http'],
  // work across modules: resolution, erasure, key rotation, start-up
  [/^modules\/auth-contexts\/(state|decide|resolve|age)\.ts$/, 'orchestration'],
  [/^modules\/gdpr\//, 'orchestration'],
  [/^ops\//, 'orchestration'],
  [/^bootstrap\.ts$/, 'orchestration'],
  // each module's own tables
  [/^modules\/[^/]+\/store\.ts$/, 'store'],
  [/^modules\/auth-contexts\/history\.ts$/, 'store'],
  // module services
  [
    /^modules\/(vendors|users|pvs|kiosk-link|devices|revocation|attributes|consents|ledger|audit|verification|session|health|webhooks)\//,
    'domain',
  ],
  // what every module may use
  [/^(config|context)\.ts$/, 'foundation'],
  [/^(db|lib)\//, 'foundation'],
  [/^crypto\/(keyring|secrets)\.ts$/, 'foundation'],
  [/^modules\/(matching|web)\//, 'foundation'],
];
/** At most this many imports may run from a lower layer to a higher one (each is listed on failure). */
const MAX_UPWARD = 3;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [relative(SRC, p)] : [];
  });
}

const FILES = sources(SRC).sort();
const TEXT = new Map(FILES.map((f) => [f, readFileSync(join(SRC, f), 'utf8')]));

function layerOf(file: string): Layer | undefined {
  return RULES.find(([re]) => re.test(file))?.[1];
}

/** Relative imports (static, re-exports, dynamic), resolved to files of server/src. */
function importsOf(file: string): string[] {
  const text = TEXT.get(file)!;
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/gms),
    ...text.matchAll(/\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]!);
  return specs
    .map((s) => normalize(join(dirname(file), s)))
    .filter((target) => TEXT.has(target) && target !== file);
}

const TABLES = new Map(Object.entries(OWNERS).flatMap(([m, ts]) => ts.map((t) => [t, m] as const)));
const KYSELY_TABLE =
  /\.(?:selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto|innerJoin|leftJoin|rightJoin|fullJoin)\(\s*['"]([a-z_]+)/g;
const QUALIFIED = /['"]([a-z_]+)\.[a-z_*]+['"]/g;
const RAW_SQL = /\bsql(?:<[^>]*>)?`([^`]*)`/g;

/** Tables a file names in SQL: Kysely calls, qualified columns and raw `sql` templates. */
function tablesNamed(file: string): Set<string> {
  const text = TEXT.get(file)!;
  const named = new Set<string>();
  for (const m of text.matchAll(KYSELY_TABLE)) named.add(m[1]!);
  for (const m of text.matchAll(QUALIFIED)) if (TABLES.has(m[1]!)) named.add(m[1]!);
  for (const m of text.matchAll(RAW_SQL))
    for (const w of m[1]!.matchAll(/\b(?:from|into|update|join)\s+"?([a-z_]+)/gi))
      if (TABLES.has(w[1]!)) named.add(w[1]!);
  return named;
}

const moduleOf = (file: string) => /^modules\/([^/]+)\//.exec(file)?.[1];

describe('server architecture (docs/architecture.md)', () => {
  it('reads the sources', () => {
    expect(FILES.length).toBeGreaterThan(50);
    expect(FILES).toContain('modules/auth-contexts/resolve.ts');
  });

  it('places every file in a layer', () => {
    expect(FILES.filter((f) => layerOf(f) === undefined)).toEqual([]);
  });

  it('no module names another module’s table in SQL; files outside modules name none', () => {
    const foreign: string[] = [];
    for (const file of FILES) {
      if (file.startsWith('db/')) continue;
      const mine = moduleOf(file);
      for (const table of tablesNamed(file)) {
        const owner = TABLES.get(table);
        if (owner === undefined) foreign.push(`${file}: '${table}' has no owner in OWNERS`);
        else if (owner !== mine) foreign.push(`${file}: '${table}' belongs to modules/${owner}`);
      }
    }
    expect(foreign).toEqual([]);
  });

  it('the ownership check sees Kysely calls, joins, qualified columns and raw SQL', () => {
    TEXT.set(
      'probe.ts',
      "db.selectFrom('palms').innerJoin('users', 'users.id', 'x'); sql`select * from ledger`",
    );
    try {
      expect([...tablesNamed('probe.ts')].sort()).toEqual(['ledger', 'palms', 'users']);
    } finally {
      TEXT.delete('probe.ts');
    }
  });

  it('has no import cycle', () => {
    const graph = new Map(FILES.map((f) => [f, importsOf(f)]));
    // Tarjan's strongly connected components.
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const cycles: string[][] = [];
    let next = 0;
    const visit = (v: string) => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      onStack.add(v);
      for (const w of graph.get(v) ?? []) {
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
      if (low.get(v) === index.get(v)) {
        const component: string[] = [];
        for (let w = stack.pop()!; ; w = stack.pop()!) {
          onStack.delete(w);
          component.push(w);
          if (w === v) break;
        }
        if (component.length > 1) cycles.push(component.sort());
      }
    };
    for (const f of FILES) if (!index.has(f)) visit(f);
    expect(cycles).toEqual([]);
  });

  it(`at most ${MAX_UPWARD} imports run from a lower layer back up`, () => {
    const upward: string[] = [];
    for (const file of FILES) {
      const from = LAYERS.indexOf(layerOf(file)!);
      for (const target of importsOf(file)) {
        const to = LAYERS.indexOf(layerOf(target)!);
        if (to > from) upward.push(`${file} (${LAYERS[from]}) -> ${target} (${LAYERS[to]})`);
      }
    }
    expect(upward.length, upward.join('\n')).toBeLessThanOrEqual(MAX_UPWARD);
  });
});
