import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Caller } from '../../context.ts';
import { type Keyring, open, seal } from '../../crypto/keyring.ts';
import type { Db } from '../../db/index.ts';
import type { AuditTable } from '../../db/schema.ts';
import { dataKeysOf } from '../users/service.ts';
import { auditStore, HEAD_ID } from './store.ts';

/**
 * Audit log (docs/user-api.md, "Audit"; docs/reliability.md): append-only and hash-chained. Each row's
 * hash covers its fields and the previous hash; the head (last seq and hash) is kept with an HMAC under a key derived from the master key, so an
 * edited, removed, reordered or truncated row is detected by `verifyAuditChain` (`admin audit verify`).
 * Rows never hold attribute values.
 *
 * Erasure leaves nothing linkable (docs/security.md): since migration 0053 a row (hash version 2) keeps its
 * personal fields — user, vendor, IP address, User-Agent — out of the hash itself: the hash covers
 * `personal_digest` = SHA-256 of a random per-row salt and those fields, and a row about a user keeps its
 * IP address and User-Agent only sealed under the user's data key (`personal_enc`). `verifyAuditChain`
 * recomputes the digest from the stored fields and the salt, so any edit of them is detected. `delete-me`
 * clears the user and vendor, the sealed copy and the salt (the data key is gone anyway): the digest can
 * no longer be recomputed nor tested against a guess, the chain still verifies, and the rows no longer
 * name the person, link to each other or to a vendor. Rows written before migration 0053 (version 1) keep
 * what they hold.
 */
export type AuditOperation = 'READ' | 'UPDATE' | 'DELETE';
export type AuditResult = 'SUCCESS' | 'DENIED' | 'ERROR';

export interface AuditEntry {
  userId: string;
  vendorId?: string | null;
  attributeName: string;
  operation: AuditOperation;
  result: AuditResult;
}

export interface AuditRecord {
  id: string;
  timestamp: string;
  user_id: string;
  vendor_id?: string;
  attribute_name: string;
  operation: AuditOperation;
  ip_address: string;
  user_agent: string;
  result: AuditResult;
}

export const GENESIS = '0'.repeat(64);
/** The `user_id` of an erased user's rows (and of rows written about an already erased user). */
export const ERASED_SUBJECT = 'erased';
const HASH_VERSION = 2;

export { HEAD_ID };

/** What a row's hash covers: the row as stored, but for the hash itself. */
type RowFields = Omit<AuditTable, 'hash'>;

/** Version 1: every field in this order. */
const HASHED = [
  'seq',
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
] as const satisfies readonly (keyof RowFields)[];
/** Version 2: the personal fields are covered through `personal_digest`. */
const HASHED_V2 = [
  'hv',
  'seq',
  'id',
  'timestamp',
  'attribute_name',
  'operation',
  'result',
  'personal_digest',
  'prev_hash',
] as const satisfies readonly (keyof RowFields)[];
/** Covered through `personal_digest` in version 2: the sealed copy and the salt. */
type Covered = (typeof HASHED)[number] | (typeof HASHED_V2)[number] | 'personal_enc' | 'personal_salt';
/** Compile-time: a column added to the audit table without joining a hashed list fails to type-check here. */
const everyColumnHashed: [Exclude<keyof RowFields, Covered>] extends [never] ? true : never = true;
void everyColumnHashed;

export function rowHash(r: RowFields): string {
  const canonical = JSON.stringify(
    Number(r.hv) === HASH_VERSION ? HASHED_V2.map((k) => r[k]) : HASHED.map((k) => r[k]),
  );
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

interface Personal {
  user_id: string;
  vendor_id: string | null;
  ip_address: string;
  user_agent: string;
}

const sha256 = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex');
/** What `personal_digest` covers: the salt, the personal columns as stored, and the sealed copy. */
const personalDigest = (r: {
  personal_salt: string | null;
  user_id: string;
  vendor_id: string | null;
  ip_address: string;
  user_agent: string;
  personal_enc: Uint8Array | null;
}) =>
  sha256(
    JSON.stringify([
      r.personal_salt,
      r.user_id,
      r.vendor_id,
      r.ip_address,
      r.user_agent,
      r.personal_enc ? Buffer.from(r.personal_enc).toString('hex') : null,
    ]),
  );
const personalAad = (rowId: string) => `audit:${rowId}`;

/** The data key of each user named in a batch (the users module's lookup). */
const subjectKeys = dataKeysOf;

export function headMac(keyring: Keyring, seq: number, hash: string): string {
  return keyring.mac('audit-head', `${seq}:${hash}`);
}

/** Appends entries in order. Must run inside the request's transaction; the head row serialises writers. */
export async function appendAudit(
  db: Db,
  keyring: Keyring,
  caller: Caller,
  entries: AuditEntry[],
  now = Date.now(),
): Promise<void> {
  if (entries.length === 0) return;
  // Take the head first: on PostgreSQL the UPDATE row-locks it until commit, so concurrent writers (on any
  // instance) queue here and each then reads the head its predecessor committed (READ COMMITTED takes a new
  // snapshot per statement). On SQLite it starts the write transaction. The row always exists (migration 0002).
  const store = auditStore(db);
  await store.lockHead();
  const head = await store.head();
  let seq = head?.seq ?? 0;
  let prev = head?.hash ?? GENESIS;
  const keys = await subjectKeys(
    db,
    keyring,
    entries.map((e) => e.userId),
  );
  for (const e of entries) {
    seq += 1;
    const id = randomUUID();
    const key = keys.get(e.userId);
    const personal: Personal =
      key === 'erased'
        ? // about a user already erased (the erasure's own record): nothing that names or locates anyone
          { user_id: ERASED_SUBJECT, vendor_id: null, ip_address: '', user_agent: '' }
        : {
            user_id: e.userId,
            vendor_id: e.vendorId ?? null,
            ip_address: caller.ip.slice(0, 64),
            user_agent: caller.userAgent.slice(0, 256),
          };
    // IP address and User-Agent of a live user's row are kept only sealed under the user's key
    const sealed =
      key instanceof Buffer
        ? seal(
            key,
            Buffer.from(JSON.stringify([personal.ip_address, personal.user_agent]), 'utf8'),
            personalAad(id),
          )
        : null;
    const stored = {
      // a row in the erased form from the start (about an erased user) is stored as a shredded one
      personal_salt: key === 'erased' ? null : randomBytes(16).toString('hex'),
      user_id: personal.user_id,
      vendor_id: personal.vendor_id,
      ip_address: sealed ? '' : personal.ip_address,
      user_agent: sealed ? '' : personal.user_agent,
      personal_enc: sealed,
    };
    const fields: RowFields = {
      seq,
      id,
      timestamp: now,
      ...stored,
      attribute_name: e.attributeName,
      operation: e.operation,
      result: e.result,
      prev_hash: prev,
      hv: HASH_VERSION,
      personal_digest: personalDigest(stored),
    };
    const hash = rowHash(fields);
    await store.insert({ ...fields, operation: e.operation, result: e.result, hash });
    prev = hash;
  }
  const mac = headMac(keyring, seq, prev);
  if (head) {
    await store.updateHead({ seq, hash: prev, mac });
  } else {
    await store.insertHead({ seq, hash: prev, mac });
  }
}

/**
 * The user's own records, newest first. Sealed rows are read from their sealed copy (a row whose sealed
 * copy names someone else is left out: its plain columns were edited).
 */
export async function listAudit(
  db: Db,
  keyring: Keyring,
  userId: string,
  limit = 1000,
): Promise<AuditRecord[]> {
  if (userId === ERASED_SUBJECT) return [];
  const rows = await auditStore(db).listOf(userId, limit);
  let key: Buffer | 'erased' | null | undefined;
  const out: AuditRecord[] = [];
  for (const r of rows) {
    const p: Personal = {
      user_id: r.user_id,
      vendor_id: r.vendor_id,
      ip_address: r.ip_address,
      user_agent: r.user_agent,
    };
    if (r.personal_enc) {
      key ??= (await subjectKeys(db, keyring, [userId])).get(userId);
      if (!(key instanceof Buffer)) continue;
      [p.ip_address, p.user_agent] = JSON.parse(
        open(key, r.personal_enc, personalAad(r.id)).toString('utf8'),
      ) as [string, string];
    }
    out.push({
      id: r.id,
      timestamp: new Date(Number(r.timestamp)).toISOString(),
      user_id: p.user_id,
      ...(p.vendor_id ? { vendor_id: p.vendor_id } : {}),
      attribute_name: r.attribute_name,
      operation: r.operation,
      ip_address: p.ip_address,
      user_agent: p.user_agent,
      result: r.result,
    });
  }
  return out;
}

/**
 * The audit log's part of an erasure (modules/gdpr): the user's sealed rows lose their sealed copy and
 * their plain `user_id`/`vendor_id`, so nothing links them to each other, to the person or to a vendor; the
 * chain still verifies (it covers the digest). Rows from before migration 0053 cannot change without
 * breaking the chain and keep their fields (docs/security.md).
 */
export async function shredAuditOf(db: Db, userId: string): Promise<number> {
  return auditStore(db).shred(userId, HASH_VERSION, {
    user_id: ERASED_SUBJECT,
    vendor_id: null,
    ip_address: '',
    user_agent: '',
    personal_enc: null,
    personal_salt: null,
  });
}

export interface AuditVerification {
  ok: boolean;
  rows: number;
  problems: { seq: number | null; problem: string }[];
}

/** Walks the whole chain. Streams in pages so a large log does not need to fit in memory. */
export async function verifyAuditChain(db: Db, keyring: Keyring): Promise<AuditVerification> {
  const problems: AuditVerification['problems'] = [];
  let prev = GENESIS;
  let expectedSeq = 1;
  let rows = 0;
  let after = 0;
  for (;;) {
    const page = await auditStore(db).pageAfter(after, 5000);
    if (page.length === 0) break;
    for (const r of page) {
      const seq = Number(r.seq);
      rows += 1;
      if (seq !== expectedSeq)
        problems.push({ seq, problem: `expected seq ${expectedSeq} (row missing or reordered)` });
      if (r.prev_hash !== prev)
        problems.push({ seq, problem: 'prev_hash does not link to the previous row' });
      const fields: RowFields = { ...r, seq, timestamp: Number(r.timestamp), hv: Number(r.hv) };
      if (rowHash(fields) !== r.hash)
        problems.push({ seq, problem: 'row content does not match its hash (edited)' });
      if (fields.hv === HASH_VERSION) {
        if (r.personal_salt !== null) {
          if (personalDigest(r) !== r.personal_digest)
            problems.push({ seq, problem: 'personal fields do not match their digest (edited)' });
        } else if (
          // shredded by an erasure: nothing personal is left, the digest alone holds the row's place
          r.user_id !== ERASED_SUBJECT ||
          r.vendor_id !== null ||
          r.ip_address !== '' ||
          r.user_agent !== '' ||
          r.personal_enc !== null
        ) {
          problems.push({ seq, problem: 'personal fields without their salt (edited)' });
        }
      }
      prev = r.hash;
      expectedSeq = seq + 1;
      after = seq;
    }
  }
  const head = await auditStore(db).head();
  if (head) {
    // Migration 0002 seeds an unsigned genesis head (seq 0, no key at migration time) for an empty log.
    const unsignedGenesis = Number(head.seq) === 0 && head.hash === GENESIS && head.mac === '';
    if (!unsignedGenesis && head.mac !== headMac(keyring, Number(head.seq), head.hash))
      problems.push({ seq: null, problem: 'chain head signature invalid' });
    if (Number(head.seq) !== expectedSeq - 1 || head.hash !== prev) {
      problems.push({
        seq: null,
        problem: `chain head says seq ${head.seq}, log ends at ${expectedSeq - 1} (rows removed or appended outside the service)`,
      });
    }
  } else if (rows > 0) {
    problems.push({ seq: null, problem: 'chain head missing' });
  }
  return { ok: problems.length === 0, rows, problems };
}

/**
 * The audit log's part of a master-key rotation (ops/rotate-master.ts): the chain head is re-signed
 * under the new key (rows themselves carry no key). Returns whether there was a head to re-sign.
 */
export async function resignHead(db: Db, to: Keyring): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    // Same lock discipline as the audit writer: take the head row first.
    const store = auditStore(trx);
    await store.lockHead();
    const head = await store.head();
    if (!head || head.mac === '') return false;
    const mac = to.mac('audit-head', `${Number(head.seq)}:${head.hash}`);
    await store.setHeadMac(mac);
    return true;
  });
}
