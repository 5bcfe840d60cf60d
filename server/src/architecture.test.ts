import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  documentedMap,
  FILES,
  importsOf,
  isStore,
  LAYERS,
  layerOf,
  MODULE_FILES,
  MODULE_ORDER,
  moduleMap,
  moduleOf,
  OWNERS,
  PARTS,
  SRC,
  TEXT,
  unitOf,
  WITHOUT,
} from '../scripts/architecture.ts';

/**
 * The server's architecture, checked over its sources (docs/architecture.md; the rules themselves are data
 * in server/scripts/architecture.ts): which module owns which table and that only its store.ts names them,
 * what each module with tables is made of, the layers and the order of the modules, no import cycle, and
 * the document's module map. A new file must be placed in a layer; a new table must be given an owner; a
 * new module a place in MODULE_ORDER.
 */

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

/** Imports of a store from anything but its own module's services. */
function wrongStoreImports(files: readonly string[]): string[] {
  const wrong: string[] = [];
  for (const file of files)
    for (const target of importsOf(file).filter(isStore)) {
      if (moduleOf(file) !== moduleOf(target))
        wrong.push(`${file} -> ${target}: another module (call its service)`);
      else if (layerOf(file) !== 'module') wrong.push(`${file} -> ${target}: routes call the service`);
    }
  return wrong;
}

/** Imports that run back up: to a higher layer, to a module later in MODULE_ORDER, from a store to a service. */
function upwardImports(files: readonly string[]): string[] {
  const upward: string[] = [];
  for (const file of files) {
    const from = LAYERS.indexOf(layerOf(file)!);
    for (const target of importsOf(file)) {
      const to = LAYERS.indexOf(layerOf(target)!);
      if (to > from) upward.push(`${file} (${LAYERS[from]}) -> ${target} (${LAYERS[to]})`);
      if (to !== from || LAYERS[from] !== 'module') continue;
      const a = MODULE_ORDER.indexOf(unitOf(file) as never);
      const b = MODULE_ORDER.indexOf(unitOf(target) as never);
      if (b > a)
        upward.push(`${file} (${unitOf(file)}) -> ${target} (${unitOf(target)}, later in MODULE_ORDER)`);
      else if (b === a && isStore(file) && !isStore(target))
        upward.push(`${file} -> ${target}: a store imports no service`);
    }
  }
  return upward;
}

describe('server architecture (docs/architecture.md)', () => {
  it('reads the sources', () => {
    expect(FILES.length).toBeGreaterThan(50);
    expect(FILES).toContain('modules/auth-contexts/resolve.ts');
  });

  it('places every file in a layer, and every module file in MODULE_ORDER', () => {
    expect(FILES.filter((f) => layerOf(f) === undefined)).toEqual([]);
    const unplaced = FILES.filter(
      (f) => layerOf(f) === 'module' && !MODULE_ORDER.includes(unitOf(f) as never),
    );
    expect(unplaced).toEqual([]);
    for (const [part, { files }] of Object.entries(PARTS)) {
      expect(MODULE_ORDER, part).toContain(part);
      for (const f of files) expect(FILES, part).toContain(`modules/${part.split('/')[0]}/${f}`);
    }
  });

  it('only a module’s store.ts names its tables in SQL; no other file names any', () => {
    const foreign: string[] = [];
    for (const file of FILES) {
      if (file.startsWith('db/')) continue;
      const mine = moduleOf(file);
      for (const table of tablesNamed(file)) {
        const owner = TABLES.get(table);
        if (owner === undefined) foreign.push(`${file}: '${table}' has no owner in OWNERS`);
        else if (owner !== mine) foreign.push(`${file}: '${table}' belongs to modules/${owner}`);
        else if (!isStore(file))
          foreign.push(`${file}: '${table}' is queried outside modules/${owner}/store.ts`);
      }
    }
    expect(foreign).toEqual([]);
  });

  it('every module with tables has store.ts, service.ts and routes.ts, or says why not (WITHOUT)', () => {
    const missing: string[] = [];
    for (const mod of Object.keys(OWNERS))
      for (const f of MODULE_FILES) {
        const has = existsSync(join(SRC, 'modules', mod, f));
        const why = WITHOUT[mod]?.[f];
        if (!has && !why) missing.push(`modules/${mod}/${f} is missing`);
        if (has && why) missing.push(`modules/${mod}/${f} exists: drop it from WITHOUT`);
      }
    for (const mod of Object.keys(WITHOUT)) if (!OWNERS[mod]) missing.push(`${mod} owns no table`);
    expect(missing).toEqual([]);
  });

  it('routes, sockets and plugins open no transaction: that work is a service’s', () => {
    const edge = FILES.filter(
      (f) => /^(modules|plugins)\//.test(f) && (layerOf(f) === 'edge' || layerOf(f) === 'http'),
    );
    expect(edge.filter((f) => /\.transaction\(\)|\bdatabase\.write\(/.test(TEXT.get(f)!))).toEqual([]);
  });

  it('every store.ts has one style: an interface, its Kysely class and a factory, no free functions', () => {
    const odd: string[] = [];
    for (const file of FILES.filter(isStore)) {
      const text = TEXT.get(file)!;
      const iface = /^export interface (\w+Store) \{/m.exec(text)?.[1];
      if (!iface) odd.push(`${file}: no \`export interface XStore\``);
      else {
        if (!new RegExp(`^export class Kysely${iface} implements ${iface} \\{`, 'm').test(text))
          odd.push(`${file}: no \`export class Kysely${iface} implements ${iface}\``);
        if (
          !new RegExp(`^export const \\w+ = \\(db: Db\\): ${iface} => new Kysely${iface}\\(db\\);`, 'm').test(
            text,
          )
        )
          odd.push(`${file}: no factory \`(db: Db): ${iface} => new Kysely${iface}(db)\``);
      }
      if (/^export (async )?function /m.test(text))
        odd.push(`${file}: a free function (a method of the store instead)`);
    }
    expect(odd).toEqual([]);
  });

  it('a store is imported only by its own module’s services: never by routes or another module', () => {
    expect(wrongStoreImports(FILES)).toEqual([]);
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

  it('every import runs down: to a lower layer, a module listed earlier in MODULE_ORDER, or a store', () => {
    expect(upwardImports(FILES)).toEqual([]);
  });

  it('no module folder imports a module listed after it, routes included: no two folders import each other', () => {
    const rank = (file: string) => MODULE_ORDER.findIndex((u) => u.split('/')[0] === moduleOf(file));
    const upward: string[] = [];
    for (const file of FILES.filter((f) => rank(f) >= 0))
      for (const target of importsOf(file))
        if (rank(target) > rank(file)) upward.push(`${file} -> ${target}`);
    expect(upward).toEqual([]);
  });

  it('the order and store checks see an import back up, a route or another module reading a store', () => {
    const probes = {
      'modules/vendors/probe.ts': "import { x } from '../users/service.ts';", // vendors is listed before users
      'modules/users/probe.ts': "import { x } from '../vendors/service.ts';", // down: fine
      'modules/devices/probe.ts': "import { x } from '../palms/service.ts';", // palms is listed after devices
      'modules/ledger/probe-routes.ts': "import { x } from './store.ts';", // a route reads a store
      'modules/consents/probe.ts': "import { x } from '../ledger/store.ts';", // another module's store
    };
    for (const [f, text] of Object.entries(probes)) TEXT.set(f, text);
    try {
      const files = Object.keys(probes);
      expect(upwardImports(files)).toEqual([
        'modules/vendors/probe.ts (vendors) -> modules/users/service.ts (users, later in MODULE_ORDER)',
        'modules/devices/probe.ts (devices) -> modules/palms/service.ts (palms, later in MODULE_ORDER)',
      ]);
      expect(wrongStoreImports(files)).toEqual([
        'modules/ledger/probe-routes.ts -> modules/ledger/store.ts: routes call the service',
        'modules/consents/probe.ts -> modules/ledger/store.ts: another module (call its service)',
      ]);
      expect(unitOf('modules/kiosk-link/store.ts')).toBe('kiosk-link');
    } finally {
      for (const f of Object.keys(probes)) TEXT.delete(f);
    }
  });

  it('docs/architecture.md’s module map is the one the code gives (npx tsx server/scripts/architecture-doc.ts --write)', () => {
    expect(documentedMap()).toBe(moduleMap());
  });
});
