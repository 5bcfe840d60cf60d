import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The server's architecture as data (docs/architecture.md): which module owns which table, the order of
 * the modules, the layers, and what a module is made of. `server/src/architecture.test.ts` checks the
 * sources against it; `server/scripts/architecture-doc.ts` prints the module map of docs/architecture.md
 * from it and from the real imports (the docs test fails when the two drift apart).
 */

export const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');
export const DOC = join(SRC, '..', '..', 'docs', 'architecture.md');

/** Module → the tables only its files may name in SQL (only its store.ts, in fact). `db/` names them all. */
export const OWNERS: Record<string, readonly string[]> = {
  vendors: ['vendors', 'api_keys'],
  users: ['users', 'user_tokens', 'claim_codes', 'palms', 'vendor_user_ids'],
  attributes: ['attributes'],
  consents: ['consents'],
  'auth-contexts': ['auth_contexts'],
  ledger: ['ledger'],
  audit: ['audit', 'audit_head'],
  pvs: ['pvs'],
  palms: ['palm_confirmations'],
  'kiosk-link': ['idempotency'],
  lockouts: ['kiosk_lockouts'],
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
 * The modules above the foundation, lowest first: a module's files, its routes included, import only
 * modules listed before it (and the foundation), so no two module folders import each other. A module
 * whose lower half served modules listed between its halves could be split: `module/part` would name that
 * lower half, its files listed in PARTS (the module's store.ts sitting with its lowest part). None is.
 */
export const MODULE_ORDER = [
  'vendors',
  'users',
  'audit',
  'ledger',
  'lockouts',
  'devices',
  'pvs',
  'palms',
  'consents',
  'attributes',
  'verification',
  'webhooks',
  'revocation',
  'auth-contexts',
  'kiosk-link',
  'gdpr',
  'mpc-users',
  'session',
  'health',
] as const;

/** The files of each split-off part, and why the module is split (none: see MODULE_ORDER). */
export const PARTS: Record<string, { files: readonly string[]; why: string }> = {};

/** Modules in the foundation layer: no tables, imported by modules and the foundation alike. */
export const FOUNDATION_MODULES = ['matching', 'web'] as const;

/** The three files of a module with tables (docs/architecture.md, "Module map"). */
export const MODULE_FILES = ['store.ts', 'service.ts', 'routes.ts'] as const;

/**
 * A module with tables that lacks one of MODULE_FILES says what stands in its place (`instead`, shown in
 * the module map) and why.
 */
export const WITHOUT: Record<
  string,
  Partial<Record<(typeof MODULE_FILES)[number], { instead: string; why: string }>>
> = {
  pvs: {
    'routes.ts': {
      instead: '—',
      why: 'kiosks are registered by the operator CLI (cli/admin.ts); their socket is kiosk-link’s /ws/pvs',
    },
  },
  lockouts: {
    'routes.ts': {
      instead: '—',
      why: 'no route of its own: kiosks are locked on /ws/pvs (kiosk-link), capture devices and API keys on POST /api/v1/auth (devices/direct-lockout.ts)',
    },
  },
  devices: {
    'routes.ts': {
      instead: '—',
      why: 'no route of its own: captures arrive on /ws/pvs (kiosk-link) and POST /api/v1/auth (auth-contexts)',
    },
  },
};

/**
 * Layers, lowest first; a file may import its own layer and those below. Within `module`, MODULE_ORDER
 * decides, and a module's store.ts sits below its other files. The first rule that matches a file (path
 * relative to server/src) places it.
 */
export const LAYERS = ['foundation', 'module', 'orchestration', 'http', 'edge'] as const;
export type Layer = (typeof LAYERS)[number];
export const RULES: [RegExp, Layer][] = [
  // edges: HTTP and WebSocket routes, request helpers, composition, processes, test kits
  [/(^|\/|-)routes\.ts$/, 'edge'],
  [/^modules\/auth-contexts\/ws\.ts$/, 'edge'],
  [/testkit\.ts$/, 'edge'],
  [/^(app|server|main|demo|demo-palm|sim-kiosk|testing)\.ts$/, 'edge'],
  [/^cli\//, 'edge'],
  // Fastify plugins: authentication, rate limits, errors, envelope
  [/^plugins\//, 'http'],
  // work across every module: key rotation, start-up
  [/^ops\//, 'orchestration'],
  [/^bootstrap\.ts$/, 'orchestration'],
  // what every module may use
  [/^(config|context)\.ts$/, 'foundation'],
  [/^(db|lib)\//, 'foundation'],
  [/^crypto\/(keyring|secrets)\.ts$/, 'foundation'],
  [/^modules\/(matching|web)\//, 'foundation'],
  // the modules, in MODULE_ORDER
  [/^modules\//, 'module'],
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [relative(SRC, p)] : [];
  });
}

/** server/src's files (tests left out), relative to it, and their text. */
export const FILES = sources(SRC).sort();
export const TEXT = new Map(FILES.map((f) => [f, readFileSync(join(SRC, f), 'utf8')]));

export function layerOf(file: string): Layer | undefined {
  return RULES.find(([re]) => re.test(file))?.[1];
}

export const moduleOf = (file: string) => /^modules\/([^/]+)\//.exec(file)?.[1];
export const isStore = (file: string) => /^modules\/[^/]+\/store\.ts$/.test(file);

/** The MODULE_ORDER entry a `module`-layer file belongs to. */
export function unitOf(file: string): string | undefined {
  const mod = moduleOf(file);
  if (mod === undefined || layerOf(file) !== 'module') return undefined;
  const name = file.slice(`modules/${mod}/`.length);
  const parts = MODULE_ORDER.filter((u) => u === mod || u.startsWith(`${mod}/`));
  if (isStore(file)) return parts[0];
  return parts.find((u) => PARTS[u]?.files.includes(name)) ?? mod;
}

/** Relative imports (static, re-exports, dynamic), resolved to files of server/src. */
export function importsOf(file: string): string[] {
  const text = TEXT.get(file)!;
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/gms),
    ...text.matchAll(/\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]!);
  return specs
    .map((s) => normalize(join(dirname(file), s)))
    .filter((target) => TEXT.has(target) && target !== file);
}

/** The directories of modules/, in map order: MODULE_ORDER's modules, then the foundation's. */
export function modules(): string[] {
  const dirs = readdirSync(join(SRC, 'modules'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  const ordered = [...new Set(MODULE_ORDER.map((u) => u.split('/')[0]!))];
  const rest = dirs.filter((d) => !ordered.includes(d)).sort();
  return [...ordered.filter((m) => dirs.includes(m)), ...rest];
}

/** The other modules whose files import a module's files of `layers` import, in map order. */
export function importedModules(mod: string, layers: readonly Layer[] = LAYERS): string[] {
  const order = modules();
  const seen = new Set<string>();
  for (const f of FILES.filter((x) => moduleOf(x) === mod && layers.includes(layerOf(x)!)))
    for (const t of importsOf(f)) {
      const other = moduleOf(t);
      if (other !== undefined && other !== mod) seen.add(other);
    }
  return order.filter((m) => seen.has(m));
}

const code = (s: string) => `\`${s}\``;
const list = (xs: readonly string[]) => xs.map(code).join(', ') || '—';

/**
 * The module map of docs/architecture.md: one row per module, from OWNERS, MODULE_ORDER, WITHOUT and the
 * real imports, then why a module with tables lacks a file.
 */
export function moduleMap(): string {
  const rows: string[][] = [
    ['order', 'module', 'owns', 'files', 'its services import', 'its routes also import'],
  ];
  for (const mod of modules()) {
    const units = MODULE_ORDER.filter((u) => u === mod || u.startsWith(`${mod}/`));
    const order = units.length
      ? units
          .map((u) => `${MODULE_ORDER.indexOf(u) + 1}${u === mod ? '' : ` (${u.split('/')[1]})`}`)
          .join(', ')
      : 'foundation';
    const files = OWNERS[mod]
      ? MODULE_FILES.map((f) =>
          existsSync(join(SRC, 'modules', mod, f)) ? f : `(${WITHOUT[mod]?.[f]?.instead ?? 'missing'})`,
        ).join(' · ')
      : '—';
    const services = importedModules(mod, ['module', 'foundation']);
    const routes = importedModules(mod, ['edge']).filter((m) => !services.includes(m));
    rows.push([order, code(mod), list(OWNERS[mod] ?? []), files, list(services), list(routes)]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const table = [
    line(rows[0]!),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...rows.slice(1).map(line),
  ];
  const without = Object.entries(WITHOUT).flatMap(([mod, files]) =>
    Object.entries(files).map(([f, w]) => `- \`${mod}\` has no \`${f}\`: ${w.why}.`),
  );
  const parts = Object.entries(PARTS).map(
    ([u, p]) => `- \`${u}\` (${p.files.map(code).join(', ')}) sits apart from its module: ${p.why}.`,
  );
  return [...table, '', ...without, ...parts].join('\n');
}

export const MAP_BEGIN =
  '<!-- module-map: generated by `npx tsx server/scripts/architecture-doc.ts --write` -->';
export const MAP_END = '<!-- /module-map -->';

/** The module map as docs/architecture.md holds it now (between the markers), or undefined. */
export function documentedMap(doc = readFileSync(DOC, 'utf8')): string | undefined {
  const begin = doc.indexOf(MAP_BEGIN);
  const end = doc.indexOf(MAP_END);
  if (begin < 0 || end < begin) return undefined;
  return doc.slice(begin + MAP_BEGIN.length, end).trim();
}

/** docs/architecture.md with its module map replaced by the one generated now. */
export function withMap(doc: string): string {
  const begin = doc.indexOf(MAP_BEGIN);
  const end = doc.indexOf(MAP_END);
  if (begin < 0 || end < begin) throw new Error(`${DOC}: no module-map markers`);
  return `${doc.slice(0, begin + MAP_BEGIN.length)}\n\n${moduleMap()}\n\n${doc.slice(end)}`;
}
