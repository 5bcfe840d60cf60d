import { createHash, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import type { Config } from '../../config.ts';
import type { Keyring } from '../../crypto/keyring.ts';
import type { Db } from '../../db/index.ts';
import { ensurePrivateDir } from '../../lib/private-files.ts';
import { type AuditVerification, GENESIS, headMac } from './service.ts';
import { auditStore } from './store.ts';

/**
 * Anchors of the audit chain: the signed head (seq, hash) copied **outside** the database. The chain
 * proves that no row was edited or removed from the middle; it cannot prove that the whole log and its
 * head were not rolled back together to an older state, or wiped to the genesis. An anchor can: every
 * row it names must still be there with the same hash.
 *
 * The server writes one to `PALMID_AUDIT_ANCHOR` (default: beside the SQLite database, named after it;
 * for PostgreSQL beside the master key file, named after the database) every minute and on shutdown,
 * never moving it backwards; `admin audit verify` checks it, and `admin audit anchor` prints one for
 * storage elsewhere (WORM bucket, ticket, paper). An anchor carries the database's identity (the hash
 * of its first audit record), so an anchor of another database is recognised as such, never taken for
 * a rollback (docs/reliability.md "Audit anchor").
 */
export interface AuditAnchor {
  seq: number;
  hash: string;
  /** HMAC of `seq:hash` under the audit key: an anchor cannot be forged without the master key */
  mac: string;
  at: string;
  /** The database's identity: the hash of its first audit record (absent while the log is empty). */
  db?: string;
}

/**
 * Where the anchor of this database lives by default: `<name>.audit-anchor.json` beside a SQLite file
 * (data/palmid.db → data/palmid.audit-anchor.json); for PostgreSQL (or an in-memory SQLite) beside the
 * master key file, named after the database, so servers on different databases never share one.
 */
export function anchorPath(
  config: Pick<Config, 'PALMID_AUDIT_ANCHOR' | 'PALMID_KEY_FILE' | 'DATABASE_URL'>,
): string {
  if (config.PALMID_AUDIT_ANCHOR) return config.PALMID_AUDIT_ANCHOR;
  const url = config.DATABASE_URL;
  if (url.startsWith('sqlite:') && url.slice(7) !== ':memory:') {
    const file = url.slice(7);
    return join(dirname(file), `${basename(file, extname(file))}.audit-anchor.json`);
  }
  let name = 'memory';
  if (!url.startsWith('sqlite:')) {
    const u = new URL(url);
    const readable = `${u.hostname}-${u.port || '5432'}-${u.pathname.replace(/^\//, '')}`.replace(
      /[^A-Za-z0-9._-]/g,
      '_',
    );
    name = `${readable}-${createHash('sha256').update(`${u.host}${u.pathname}`).digest('hex').slice(0, 8)}`;
  }
  return join(dirname(config.PALMID_KEY_FILE), `audit-anchor.${name}.json`);
}

async function firstRecordHash(db: Db): Promise<string | undefined> {
  return auditStore(db).hashAt(1);
}

/** The current head, signed, with the database's identity. */
export async function currentAnchor(db: Db, keyring: Keyring, now = Date.now()): Promise<AuditAnchor> {
  const head = await auditStore(db).head();
  const seq = Number(head?.seq ?? 0);
  const hash = head?.hash ?? GENESIS;
  const first = seq > 0 ? await firstRecordHash(db) : undefined;
  return {
    seq,
    hash,
    mac: headMac(keyring, seq, hash),
    at: new Date(now).toISOString(),
    ...(first ? { db: first } : {}),
  };
}

/** The message for an anchor written for another database (two servers sharing one anchor file). */
export const FOREIGN_ANCHOR =
  'this anchor belongs to another database (its first audit record differs from this one), or this database was wiped and started again';

/** True when `anchor` names a database and this database is another one. */
export async function anchorOfAnotherDatabase(db: Db, anchor: AuditAnchor): Promise<boolean> {
  if (!anchor.db) return false;
  const first = await firstRecordHash(db);
  return first !== undefined && first !== anchor.db;
}

const sameText = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Problems found checking the log against an anchor (empty when the log still extends it). */
export async function checkAnchor(
  db: Db,
  keyring: Keyring,
  anchor: AuditAnchor,
): Promise<AuditVerification['problems']> {
  if (!sameText(anchor.mac, headMac(keyring, anchor.seq, anchor.hash)))
    return [
      { seq: null, problem: 'anchor is not signed by this master key (forged or from another deployment)' },
    ];
  if (anchor.seq === 0) return [];
  if (await anchorOfAnotherDatabase(db, anchor)) return [{ seq: null, problem: FOREIGN_ANCHOR }];
  const hash = await auditStore(db).hashAt(anchor.seq);
  if (hash === undefined)
    return [
      {
        seq: anchor.seq,
        problem: `row ${anchor.seq}, anchored at ${anchor.at}, is gone: the log was rolled back or wiped`,
      },
    ];
  if (hash !== anchor.hash)
    return [
      {
        seq: anchor.seq,
        problem: `row ${anchor.seq} differs from its anchor of ${anchor.at} (log rewritten)`,
      },
    ];
  return [];
}

export function parseAnchor(text: string): AuditAnchor {
  const v = JSON.parse(text) as Partial<AuditAnchor> | null;
  if (
    typeof v !== 'object' ||
    v === null ||
    !Number.isSafeInteger(v.seq) ||
    (v.seq as number) < 0 ||
    typeof v.hash !== 'string' ||
    !/^[0-9a-f]{64}$/.test(v.hash) ||
    typeof v.mac !== 'string' ||
    typeof v.at !== 'string' ||
    (v.db !== undefined && (typeof v.db !== 'string' || !/^[0-9a-f]{64}$/.test(v.db)))
  )
    throw new Error('not an audit anchor: expected {seq, hash, mac, at, db?}');
  return v as AuditAnchor;
}

export function readAnchorFile(path: string): AuditAnchor | undefined {
  if (!existsSync(path)) return undefined;
  return parseAnchor(readFileSync(path, 'utf8'));
}

/**
 * Keeps the anchor file current. Refuses to move it backwards: a head older than the stored anchor
 * means the database was rolled back, which is reported instead of being papered over.
 */
export class AnchorKeeper {
  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly path: string,
  ) {}

  async update(
    now = Date.now(),
  ): Promise<{ written: boolean; rollback?: { anchored: number; head: number }; foreign?: string }> {
    const next = await currentAnchor(this.db, this.keyring, now);
    let stored: AuditAnchor | undefined;
    try {
      stored = readAnchorFile(this.path);
    } catch {
      stored = undefined; // unreadable: replace it
    }
    // Another database's anchor is neither overwritten nor taken for a rollback of this one.
    if (stored?.db && next.db && stored.db !== next.db) return { written: false, foreign: this.path };
    if (stored && stored.seq > next.seq)
      return { written: false, rollback: { anchored: stored.seq, head: next.seq } };
    if (stored && stored.seq === next.seq && stored.hash === next.hash) return { written: false };
    writeAnchor(this.path, next);
    return { written: true };
  }
}

/**
 * Master-key rotation: re-signs the anchor file under the new key (same seq and hash). An anchor
 * that neither key signed is left alone and reported, never blessed.
 */
export function resignAnchorFile(
  path: string,
  from: Keyring,
  to: Keyring,
): 'resigned' | 'already' | 'absent' | 'invalid' {
  let anchor: AuditAnchor | undefined;
  try {
    anchor = readAnchorFile(path);
  } catch {
    return 'invalid';
  }
  if (!anchor) return 'absent';
  if (sameText(anchor.mac, headMac(to, anchor.seq, anchor.hash))) return 'already';
  if (!sameText(anchor.mac, headMac(from, anchor.seq, anchor.hash))) return 'invalid';
  writeAnchor(path, { ...anchor, mac: headMac(to, anchor.seq, anchor.hash) });
  return 'resigned';
}

function writeAnchor(path: string, anchor: AuditAnchor): void {
  ensurePrivateDir(dirname(path));
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(anchor)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}
