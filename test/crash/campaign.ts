import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeContext, createContext } from '@palmid/server/bootstrap';
import { loadConfig } from '@palmid/server/config';
import { createUser } from '@palmid/server/modules/users/service';
import { authenticateVendor, createVendor } from '@palmid/server/modules/vendors/service';
import { build } from 'esbuild';
import { type Ack, ExactGallery, ExactMatcher, type Fixture } from './writer.ts';

/**
 * Crash safety at scale: a small child process (test/crash/writer.ts, bundled once with esbuild so it starts
 * in ~100 ms) opens the real SQLite store with the real services and writes attributes, consents and
 * resolved auth contexts until it is SIGKILLed at a random moment. Each restart (the next child) runs
 * `PRAGMA integrity_check`, verifies the audit chain and checks that every write the previous child
 * acknowledged is present. A warm spare child is kept loaded so a kill costs only the database open.
 */
const ROOT = new URL('../../', import.meta.url).pathname;
const BUNDLE_DIR = join(ROOT, 'node_modules/.cache/palmid-crash');

export interface CrashFigures {
  kills: number;
  acknowledged: number;
  byKind: Record<string, number>;
  auditRows: number;
  /** kills that landed before the child's first acknowledged write of its run */
  killsBeforeFirstAck: number;
  ms: number;
}

let bundled: Promise<string> | undefined;

/** Bundles the writer (native and optional modules stay external and resolve from node_modules). */
export function bundleWriter(): Promise<string> {
  bundled ??= (async () => {
    mkdirSync(BUNDLE_DIR, { recursive: true });
    const outfile = join(BUNDLE_DIR, `writer-${process.pid}.mjs`);
    await build({
      entryPoints: [join(ROOT, 'test/crash/writer.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile,
      logLevel: 'silent',
      external: ['better-sqlite3', 'pg', 'ioredis', 'onnxruntime-node', 'sharp', 'pino-pretty'],
      banner: {
        js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
      },
    });
    return outfile;
  })();
  return bundled;
}

export async function makeFixture(
  dir: string,
  users = 4,
): Promise<{ db: string; key: string; fixture: string }> {
  const db = join(dir, 'palmid.db');
  const key = join(dir, 'master.key');
  const ctx = await createContext(
    loadConfig({ DATABASE_URL: `sqlite:${db}`, PALMID_KEY_FILE: key, PALMID_ENV: 'sandbox' }),
    { matcher: new ExactMatcher(), gallery: new ExactGallery() },
  );
  try {
    const created = await createVendor(ctx.database.db, { name: 'Crash Cafe', url: 'https://crash.example' });
    const vendor = await authenticateVendor(ctx.database.db, created.api_key, 'sandbox');
    const fixture: Fixture = { vendor, users: [] };
    for (let i = 0; i < users; i++) {
      const user = await createUser(ctx, ctx.database.db, vendor.id);
      fixture.users.push({
        id: user.id,
        template: Buffer.from(`palm-template-${i}-${user.id}`).toString('base64'),
      });
    }
    const fixtureFile = join(dir, 'fixture.json');
    writeFileSync(fixtureFile, JSON.stringify(fixture));
    return { db, key, fixture: fixtureFile };
  } finally {
    await closeContext(ctx);
  }
}

interface Child {
  proc: ChildProcess;
  lines: string[];
  onLine: ((line: string) => void) | undefined;
  exited: Promise<void>;
}

function spawnWriter(bundle: string, args: string[]): Child {
  const proc = spawn(process.execPath, [bundle, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, PALMID_VERSION: 'crash-test' },
  });
  const child: Child = {
    proc,
    lines: [],
    onLine: undefined,
    exited: new Promise((r) => proc.once('close', () => r())),
  };
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString('utf8');
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      child.lines.push(line);
      child.onLine?.(line);
    }
  });
  proc.stderr!.on('data', (d: Buffer) => child.lines.push(`stderr: ${d.toString('utf8').trim()}`));
  return child;
}

function waitLine(child: Child, re: RegExp, timeoutMs = 20_000): Promise<string> {
  const found = child.lines.find((l) => re.test(l));
  if (found) return Promise.resolve(found);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new Error(`writer: no ${re} within ${timeoutMs} ms:\n${child.lines.slice(-10).join('\n')}`)),
      timeoutMs,
    );
    child.onLine = (line) => {
      if (re.test(line)) {
        clearTimeout(timer);
        child.onLine = undefined;
        resolve(line);
      } else if (line.startsWith('FATAL')) {
        clearTimeout(timer);
        reject(new Error(`writer failed: ${line}\n${child.lines.slice(-10).join('\n')}`));
      }
    };
  });
}

interface CheckLine {
  integrity: string;
  audit_ok: boolean;
  audit_rows: number;
  audit_problems: unknown[];
  verified: number;
  missing: string[];
}

function assertCheck(check: CheckLine, kill: number): void {
  if (check.integrity !== 'ok') throw new Error(`after kill ${kill}: integrity_check ${check.integrity}`);
  if (!check.audit_ok)
    throw new Error(`after kill ${kill}: audit chain broken ${JSON.stringify(check.audit_problems)}`);
  if (check.missing.length > 0)
    throw new Error(`after kill ${kill}: acknowledged writes lost: ${check.missing.join(', ')}`);
}

/**
 * Runs `kills` SIGKILL cycles. The kill lands `minMs`–`maxMs` after the child reported it is writing, so
 * kills fall before, between and inside transactions.
 */
export async function runCrashCampaign(opts: {
  kills: number;
  seed?: number;
  minMs?: number;
  maxMs?: number;
  onProgress?: (i: number) => void;
}): Promise<CrashFigures> {
  const t0 = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'palmid-crash-'));
  try {
    const bundle = await bundleWriter();
    const files = await makeFixture(dir);
    const ackFile = join(dir, 'acks.jsonl');
    const allAcks = join(dir, 'all-acks.jsonl');
    let seed = opts.seed ?? Date.now();
    const rnd = () => {
      seed = (seed * 16807) % 2147483647 || 1;
      return seed / 2147483647;
    };
    const minMs = opts.minMs ?? 0;
    const maxMs = opts.maxMs ?? 40;
    const figures: CrashFigures = {
      kills: 0,
      acknowledged: 0,
      byKind: {},
      auditRows: 0,
      killsBeforeFirstAck: 0,
      ms: 0,
    };
    const args = (i: number) => [files.db, files.key, files.fixture, ackFile, String(i + 1)];
    // Warm spares: children that have loaded their modules and wait for `go`, so a kill cycle costs only
    // the database open (two, so loading overlaps the running child's fsync waits on both cores).
    const SPARES = 2;
    const spares = Array.from({ length: SPARES }, (_, i) => spawnWriter(bundle, args(i)));
    const phase = { load: 0, check: 0, write: 0, reap: 0 };
    for (let i = 0; i < opts.kills; i++) {
      const child = spares.shift()!;
      let t = Date.now();
      await waitLine(child, /^LOADED$/);
      phase.load += Date.now() - t;
      t = Date.now();
      child.proc.stdin!.write('go\n');
      const check = JSON.parse((await waitLine(child, /^CHECK /)).slice(6)) as CheckLine;
      assertCheck(check, i);
      phase.check += Date.now() - t;
      t = Date.now();
      // keep the next children loading while this one writes
      spares.push(spawnWriter(bundle, args(i + SPARES)));
      const delay = minMs + rnd() * (maxMs - minMs);
      await new Promise((r) => setTimeout(r, delay));
      child.proc.kill('SIGKILL');
      phase.write += Date.now() - t;
      t = Date.now();
      await child.exited;
      phase.reap += Date.now() - t;
      const fatal = child.lines.find((l) => l.startsWith('FATAL'));
      if (fatal) throw new Error(`writer failed before the kill: ${fatal}`);
      const acks = child.lines.filter((l) => l.startsWith('ACK ')).map((l) => l.slice(4));
      if (acks.length === 0) figures.killsBeforeFirstAck += 1;
      for (const a of acks) {
        const kind = (JSON.parse(a) as Ack).kind;
        figures.byKind[kind] = (figures.byKind[kind] ?? 0) + 1;
      }
      figures.acknowledged += acks.length;
      writeFileSync(ackFile, acks.length ? `${acks.join('\n')}\n` : '');
      if (acks.length) appendFileSync(allAcks, `${acks.join('\n')}\n`);
      figures.kills += 1;
      opts.onProgress?.(i + 1);
    }
    for (const spare of spares) {
      spare.proc.kill('SIGKILL');
      await spare.exited;
    }
    // Final full check: every write acknowledged over the whole campaign is still there.
    const final = spawnWriter(bundle, [files.db, files.key, files.fixture, allAcks, '0']);
    final.proc.stdin!.write('go\n');
    const check = JSON.parse((await waitLine(final, /^CHECK /, 120_000)).slice(6)) as CheckLine;
    final.proc.kill('SIGKILL');
    await final.exited;
    assertCheck(check, opts.kills);
    if (check.verified !== figures.acknowledged)
      throw new Error('final check did not see every acknowledgement');
    figures.auditRows = check.audit_rows;
    figures.ms = Date.now() - t0;
    if (process.env.CRASH_PHASES) console.error(phase);
    return figures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
    // one bundle per process; drop it so node_modules/.cache does not fill up with old ones
    const b = await bundled?.catch(() => undefined);
    bundled = undefined;
    if (b) rmSync(b, { force: true });
  }
}
