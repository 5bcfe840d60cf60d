import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeContext, createContext } from '@palmid/server/bootstrap';
import { loadConfig } from '@palmid/server/config';
import { Keyring, loadMasterKey } from '@palmid/server/crypto/keyring';
import { openDatabase } from '@palmid/server/db/index';
import { auditedAccess } from '@palmid/server/modules/attributes/audit';
import { writeAttribute } from '@palmid/server/modules/attributes/service';
import { rowHash, verifyAuditChain } from '@palmid/server/modules/audit/service';
import { createUser } from '@palmid/server/modules/users/service';
import SQLite from 'better-sqlite3';
import fc from 'fast-check';
import { ExactGallery, ExactMatcher } from '../crash/writer.ts';

/**
 * Tampering with a copy of a real database: fast-check picks one change to the audit table or its head
 * (a flipped byte in any column, a deleted row, two rows swapped, a field rewritten to another plausible
 * value, a forged row appended, a deleted row with the rest of the chain recomputed, a truncated tail with
 * the head rewritten, a flipped byte in the head). The chain verifier must report every one.
 */
export const COLUMNS = [
  'id',
  'timestamp',
  'user_id',
  'vendor_id',
  'attribute_name',
  'operation',
  'ip_address',
  'user_agent',
  'result',
  'prev_hash',
  'hash',
  'hv',
  'personal_salt',
  'personal_digest',
] as const;

export type Tamper =
  | { kind: 'flip'; row: number; column: (typeof COLUMNS)[number]; pos: number; xor: number }
  | { kind: 'delete'; row: number }
  | { kind: 'swap'; a: number; b: number }
  | {
      kind: 'edit';
      row: number;
      column: 'result' | 'operation' | 'attribute_name' | 'ip_address';
      value: string;
    }
  | { kind: 'append-forged'; value: string }
  | { kind: 'delete-rehash'; row: number }
  | { kind: 'truncate-rehead'; keep: number }
  | { kind: 'head-flip'; column: 'seq' | 'hash' | 'mac'; pos: number; xor: number };

export const tamperArb = (rows: number): fc.Arbitrary<Tamper> => {
  const row = fc.integer({ min: 1, max: rows });
  const xor = fc.integer({ min: 1, max: 127 });
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('flip' as const),
        row,
        column: fc.constantFrom(...COLUMNS),
        pos: fc.nat(),
        xor,
      }),
    },
    fc.record({ kind: fc.constant('delete' as const), row }),
    fc.record({ kind: fc.constant('swap' as const), a: row, b: row }).filter((t) => t.a !== t.b),
    fc.record({
      kind: fc.constant('edit' as const),
      row,
      column: fc.constantFrom(
        'result' as const,
        'operation' as const,
        'attribute_name' as const,
        'ip_address' as const,
      ),
      value: fc.constantFrom('SUCCESS', 'DENIED', 'READ', 'DELETE', 'email', 'phone', '10.0.0.1'),
    }),
    fc.record({
      kind: fc.constant('append-forged' as const),
      value: fc.constantFrom('email', 'date_of_birth'),
    }),
    fc.record({ kind: fc.constant('delete-rehash' as const), row }),
    fc.record({ kind: fc.constant('truncate-rehead' as const), keep: fc.integer({ min: 0, max: rows - 1 }) }),
    fc.record({
      kind: fc.constant('head-flip' as const),
      column: fc.constantFrom('seq' as const, 'hash' as const, 'mac' as const),
      pos: fc.nat(),
      xor,
    }),
  );
};

type Row = Record<(typeof COLUMNS)[number] | 'seq', string | number | null>;

function flipString(s: string, pos: number, xor: number): string {
  const i = pos % Math.max(1, s.length);
  if (s.length === 0) return String.fromCharCode(xor);
  const code = s.charCodeAt(i) ^ xor;
  return s.slice(0, i) + String.fromCharCode(code === 0 ? 1 : code) + s.slice(i + 1);
}

function rehash(db: SQLite.Database, fromSeq: number): void {
  const rows = db.prepare('SELECT * FROM audit WHERE seq >= ? ORDER BY seq').all(fromSeq) as Row[];
  let prev =
    (
      db.prepare('SELECT hash FROM audit WHERE seq < ? ORDER BY seq DESC LIMIT 1').get(fromSeq) as
        | { hash: string }
        | undefined
    )?.hash ?? '0'.repeat(64);
  for (const r of rows) {
    const fields = { ...(r as unknown as Parameters<typeof rowHash>[0]), prev_hash: prev };
    const hash = rowHash(fields);
    db.prepare('UPDATE audit SET prev_hash = ?, hash = ? WHERE seq = ?').run(prev, hash, r.seq);
    prev = hash;
  }
}

/** Points the head at the last row left; its MAC stays as it was (a new one needs the master key). */
function reHead(db: SQLite.Database): void {
  const last = db.prepare('SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1').get() as
    | { seq: number; hash: string }
    | undefined;
  db.prepare('UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1').run(
    last?.seq ?? 0,
    last?.hash ?? '0'.repeat(64),
  );
}

/** Applies one tamper to the database file; returns false when it would not change anything. */
export function applyTamper(path: string, t: Tamper): boolean {
  const db = new SQLite(path);
  try {
    const get = (seq: number) => db.prepare('SELECT * FROM audit WHERE seq = ?').get(seq) as Row | undefined;
    switch (t.kind) {
      case 'flip': {
        const r = get(t.row);
        if (!r) return false;
        const old = r[t.column];
        const value =
          typeof old === 'number'
            ? old ^ (1 << (t.pos % 31))
            : old === null
              ? 'x'
              : flipString(old, t.pos, t.xor);
        db.prepare(`UPDATE audit SET ${t.column} = ? WHERE seq = ?`).run(value, t.row);
        return true;
      }
      case 'delete':
        return db.prepare('DELETE FROM audit WHERE seq = ?').run(t.row).changes === 1;
      case 'swap': {
        db.prepare('UPDATE audit SET seq = -1 WHERE seq = ?').run(t.a);
        db.prepare('UPDATE audit SET seq = ? WHERE seq = ?').run(t.a, t.b);
        db.prepare('UPDATE audit SET seq = ? WHERE seq = -1').run(t.b);
        const a = get(t.a);
        const b = get(t.b);
        return !!a && !!b;
      }
      case 'edit': {
        const r = get(t.row);
        if (!r || r[t.column] === t.value) return false;
        db.prepare(`UPDATE audit SET ${t.column} = ? WHERE seq = ?`).run(t.value, t.row);
        return true;
      }
      case 'append-forged': {
        const last = db.prepare('SELECT * FROM audit ORDER BY seq DESC LIMIT 1').get() as Row;
        const fields = {
          ...(last as unknown as Parameters<typeof rowHash>[0]),
          seq: Number(last.seq) + 1,
          id: crypto.randomUUID(),
          attribute_name: t.value,
          prev_hash: String(last.hash),
        };
        const hash = rowHash(fields);
        db.prepare(
          `INSERT INTO audit (seq, id, timestamp, user_id, vendor_id, attribute_name, operation, ip_address, user_agent, result, prev_hash, hash)
           VALUES (@seq, @id, @timestamp, @user_id, @vendor_id, @attribute_name, @operation, @ip_address, @user_agent, @result, @prev_hash, @hash)`,
        ).run({ ...fields, hash });
        return true;
      }
      case 'delete-rehash': {
        if (db.prepare('DELETE FROM audit WHERE seq = ?').run(t.row).changes !== 1) return false;
        db.prepare('UPDATE audit SET seq = seq - 1 WHERE seq > ?').run(t.row);
        rehash(db, t.row);
        reHead(db);
        return true;
      }
      case 'truncate-rehead': {
        db.prepare('DELETE FROM audit WHERE seq > ?').run(t.keep);
        reHead(db);
        return true;
      }
      case 'head-flip': {
        const h = db.prepare('SELECT * FROM audit_head WHERE id = 1').get() as {
          seq: number;
          hash: string;
          mac: string;
        };
        const old = h[t.column];
        const value = typeof old === 'number' ? old ^ (1 << (t.pos % 20)) : flipString(old, t.pos, t.xor);
        db.prepare(`UPDATE audit_head SET ${t.column} = ? WHERE id = 1`).run(value);
        return true;
      }
    }
  } finally {
    db.close();
  }
}

export interface Golden {
  dir: string;
  db: string;
  key: string;
  rows: number;
  remove(): void;
}

/** A real database whose audit log was written by the real services (attribute writes by several users). */
export async function makeGolden(writes = 24): Promise<Golden> {
  const dir = mkdtempSync(join(tmpdir(), 'palmid-tamper-'));
  const db = join(dir, 'palmid.db');
  const key = join(dir, 'master.key');
  const ctx = await createContext(
    loadConfig({ DATABASE_URL: `sqlite:${db}`, PALMID_KEY_FILE: key, PALMID_ENV: 'sandbox' }),
    { matcher: new ExactMatcher(), gallery: new ExactGallery() },
  );
  const users = [await createUser(ctx, ctx.database.db, null), await createUser(ctx, ctx.database.db, null)];
  for (let i = 0; i < writes; i++) {
    const user = users[i % users.length]!;
    const name = ['email', 'phone', 'postal_code', 'nickname'][i % 4]!;
    const value =
      name === 'email'
        ? `u${i}@example.com`
        : name === 'phone'
          ? `+4915112345${String(i).padStart(3, '0')}`
          : `v${i}`;
    await auditedAccess(
      ctx,
      { ip: `192.0.2.${i}`, userAgent: `agent/${i}` },
      user.id,
      'UPDATE',
      (trx) => writeAttribute(ctx, trx, user.id, { name, value, clientEncrypted: false }, 'user', ctx.now()),
      [name],
    );
  }
  const rows = (await verifyAuditChain(ctx.database.db, ctx.keyring)).rows;
  await closeContext(ctx);
  return { dir, db, key, rows, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function verifyCopy(
  path: string,
  keyFile: string,
): Promise<{ ok: boolean; problems: unknown[] }> {
  const database = await openDatabase(`sqlite:${path}`);
  try {
    const r = await verifyAuditChain(database.db, new Keyring(loadMasterKey(undefined, keyFile)));
    return { ok: r.ok, problems: r.problems };
  } finally {
    await database.close();
  }
}

export interface TamperFigures {
  cases: number;
  detected: number;
  byKind: Record<string, number>;
}

export async function runTamperCampaign(
  golden: Golden,
  opts: { runs: number; seed?: number },
): Promise<TamperFigures> {
  const figures: TamperFigures = { cases: 0, detected: 0, byKind: {} };
  let n = 0;
  await fc.assert(
    fc.asyncProperty(tamperArb(golden.rows), async (t) => {
      const copy = join(golden.dir, `copy-${n++}.db`);
      copyFileSync(golden.db, copy);
      try {
        if (!applyTamper(copy, t)) return;
        figures.cases += 1;
        figures.byKind[t.kind] = (figures.byKind[t.kind] ?? 0) + 1;
        const r = await verifyCopy(copy, golden.key);
        if (r.ok) throw new Error(`undetected tamper ${JSON.stringify(t)}`);
        figures.detected += 1;
      } finally {
        rmSync(copy, { force: true });
        rmSync(`${copy}-wal`, { force: true });
        rmSync(`${copy}-shm`, { force: true });
      }
    }),
    { numRuns: opts.runs, endOnFailure: true, ...(opts.seed !== undefined ? { seed: opts.seed } : {}) },
  );
  return figures;
}
