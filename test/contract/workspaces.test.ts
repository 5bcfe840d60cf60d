import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The package graph as docs/architecture.md ("Packages") documents it, held against the code, tests
 * included: the graph is acyclic and runs down the documented order, no relative import leaves its
 * package, every package import is declared, a production package depends on no dev package, exports are
 * explicit and exist, and what the pages import from `@palmid/contracts` reaches no `node:` module.
 */
const ROOT = normalize(join(import.meta.dirname, '../..'));

interface Pkg {
  name: string;
  dir: string;
  order: number;
  kind: 'production' | 'dev';
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  exports: Record<string, string> | undefined;
}

/** The documented table: `| order | \`name\` | \`folder\` | kind | … |`. */
function documentedPackages(): Pkg[] {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Packages'), doc.indexOf('\n## ', doc.indexOf('## Packages') + 3));
  const rows = [
    ...section.matchAll(/^\|\s*(\d+)\s*\|\s*`(@palmid\/[a-z-]+)`\s*\|\s*`([^`]+)`\s*\|\s*(\w+)/gm),
  ];
  return rows.map((m) => {
    const dir = m[3]!;
    const pj = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as Partial<Pkg>;
    return {
      name: m[2]!,
      dir,
      order: Number(m[1]),
      kind: m[4] as Pkg['kind'],
      dependencies: pj.dependencies ?? {},
      devDependencies: pj.devDependencies ?? {},
      exports: pj.exports as Record<string, string> | undefined,
    };
  });
}

const PACKAGES = documentedPackages();
const byName = new Map(PACKAGES.map((p) => [p.name, p]));

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      if (name === 'node_modules' || name.startsWith('.')) continue;
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(ts|mts|mjs|js)$/.test(name)) out.push(p);
    }
  };
  walk(join(ROOT, dir));
  return out;
}

/** Import specifiers: static, dynamic and type imports, re-exports, vi.mock. */
function specifiers(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|vi\.mock\(\s*)(['"])([^'"\n]+)\1/g;
  return [...text.matchAll(re)].map((m) => m[2]!);
}

const packageName = (spec: string) => spec.match(/^(@palmid\/[a-z-]+)/)?.[1];
/** A file only tests, development kits or build scripts load. */
const isDevFile = (pkg: Pkg, file: string) => {
  const rel = relative(join(ROOT, pkg.dir), file);
  return /\.test\.ts$/.test(rel) || rel.startsWith('dev/') || rel.startsWith('scripts/');
};

describe('workspaces (docs/architecture.md "Packages")', () => {
  it('the documented packages are exactly the npm workspaces', () => {
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] };
    expect(PACKAGES.length).toBeGreaterThanOrEqual(8);
    expect([...root.workspaces].sort()).toEqual(PACKAGES.map((p) => p.dir).sort());
    for (const p of PACKAGES) {
      const pj = JSON.parse(readFileSync(join(ROOT, p.dir, 'package.json'), 'utf8')) as { name: string };
      expect(pj.name, p.dir).toBe(p.name);
    }
  });

  it('each package has a README that says what it is', () => {
    for (const p of PACKAGES) {
      const readme = join(ROOT, p.dir, 'README.md');
      expect(existsSync(readme), `${p.dir}/README.md`).toBe(true);
      expect(readFileSync(readme, 'utf8').trim().length, `${p.dir}/README.md`).toBeGreaterThan(80);
    }
  });

  it('the declared dependency graph is acyclic and runs down the documented order', () => {
    for (const p of PACKAGES) {
      for (const dep of [...Object.keys(p.dependencies), ...Object.keys(p.devDependencies)]) {
        const d = byName.get(dep);
        if (!d) continue;
        expect(d.order, `${p.name} depends on ${dep}, which is documented above it`).toBeLessThan(p.order);
      }
    }
  });

  it('a production package depends on no dev package (devDependencies only)', () => {
    for (const p of PACKAGES.filter((x) => x.kind === 'production')) {
      for (const dep of Object.keys(p.dependencies)) {
        expect(byName.get(dep)?.kind, `${p.name} has ${dep} in dependencies`).not.toBe('dev');
      }
    }
  });

  it('no relative import leaves its package; every package import is declared and goes down the order', () => {
    const problems: string[] = [];
    for (const p of PACKAGES) {
      const base = join(ROOT, p.dir);
      for (const file of sourceFiles(p.dir)) {
        const rel = relative(ROOT, file);
        for (const spec of specifiers(file)) {
          if (spec.startsWith('.')) {
            const target = normalize(join(dirname(file), spec));
            // test files may use the repository's test kit (test/support: databases, seeded palms), which is no package
            const kit = isDevFile(p, file) && target.startsWith(`${ROOT}/test/support/`);
            if (!target.startsWith(`${base}/`) && !kit)
              problems.push(`${rel}: relative import ${spec} leaves ${p.dir}`);
            continue;
          }
          const name = packageName(spec);
          if (!name || name === p.name) {
            if (name === p.name) problems.push(`${rel}: imports its own package by name (${spec})`);
            continue;
          }
          const dep = byName.get(name);
          if (!dep) {
            problems.push(`${rel}: ${spec} is no documented package`);
            continue;
          }
          if (dep.order >= p.order) problems.push(`${rel}: ${spec} runs back up the order`);
          const declared = isDevFile(p, file)
            ? name in p.dependencies || name in p.devDependencies
            : name in p.dependencies ||
              // a production file may load a dev package on demand only (the agent's sim transport)
              (name in p.devDependencies && /import\(\s*['"]/.test(readFileSync(file, 'utf8')));
          if (!declared) problems.push(`${rel}: ${spec} is not declared in ${p.dir}/package.json`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('exports are explicit (no wildcard) and every target exists', () => {
    for (const p of PACKAGES.filter((x) => x.exports)) {
      for (const [key, target] of Object.entries(p.exports!)) {
        expect(key.includes('*'), `${p.name} exports ${key}`).toBe(false);
        expect(existsSync(join(ROOT, p.dir, target)), `${p.name} exports ${key} -> ${target}`).toBe(true);
      }
    }
  });

  it('what the pages import from @palmid/contracts reaches no node: module (browser-safe)', () => {
    const contracts = byName.get('@palmid/contracts')!;
    const seen = new Set<string>();
    const queue: string[] = [];
    for (const file of sourceFiles('web')) {
      for (const spec of specifiers(file)) {
        if (packageName(spec) !== contracts.name) continue;
        const key = `.${spec.slice(contracts.name.length)}` || '.';
        const target = contracts.exports?.[key === '.' ? '.' : key];
        expect(target, `web imports ${spec}, which contracts does not export`).toBeDefined();
        queue.push(join(ROOT, contracts.dir, target!));
      }
    }
    expect(queue.length).toBeGreaterThan(0);
    const nodeImports: string[] = [];
    while (queue.length) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      for (const spec of specifiers(file)) {
        if (spec.startsWith('node:')) nodeImports.push(`${relative(ROOT, file)} imports ${spec}`);
        else if (spec.startsWith('.')) queue.push(normalize(join(dirname(file), spec)));
      }
    }
    expect(nodeImports).toEqual([]);
  });
});
