import { createHash, randomUUID } from 'node:crypto';
import type { Caller } from '../../context.ts';
import type { Keyring } from '../../crypto/keyring.ts';
import type { Db } from '../../db/index.ts';
import type { AuditTable } from '../../db/schema.ts';

/**
 * Audit log (docs/user-api.md, "Audit"; docs/reliability.md): append-only and hash-chained. Each row's
 * hash covers its fields and the previous hash; the head (last seq and hash) is kept with an HMAC under a key derived from the master key, so an
 * edited, removed, reordered or truncated row is detected by `verifyAuditChain` (`admin audit verify`).
 * Rows never hold attribute values.
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
export const HEAD_ID = 1;

/** What a row's hash covers: the row as stored, but for the hash itself. */
type RowFields = Omit<AuditTable, 'hash'>;

/** The hashed fields in hash order. Every stored column but the hash must be one (checked below). */
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
/** Compile-time: a column added to the audit table without joining HASHED fails to type-check here. */
const everyColumnHashed: [Exclude<keyof RowFields, (typeof HASHED)[number]>] extends [never] ? true : never =
  true;
void everyColumnHashed;

export function rowHash(r: RowFields): string {
  const canonical = JSON.stringify(HASHED.map((k) => r[k]));
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

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
  await db
    .updateTable('audit_head')
    .set((eb) => ({ seq: eb.ref('seq') }))
    .where('id', '=', HEAD_ID)
    .execute();
  const head = await db.selectFrom('audit_head').selectAll().where('id', '=', HEAD_ID).executeTakeFirst();
  let seq = head?.seq ?? 0;
  let prev = head?.hash ?? GENESIS;
  for (const e of entries) {
    seq += 1;
    const fields: RowFields = {
      seq,
      id: randomUUID(),
      timestamp: now,
      user_id: e.userId,
      vendor_id: e.vendorId ?? null,
      attribute_name: e.attributeName,
      operation: e.operation,
      ip_address: caller.ip.slice(0, 64),
      user_agent: caller.userAgent.slice(0, 256),
      result: e.result,
      prev_hash: prev,
    };
    const hash = rowHash(fields);
    await db
      .insertInto('audit')
      .values({ ...fields, operation: e.operation, result: e.result, hash })
      .execute();
    prev = hash;
  }
  const mac = headMac(keyring, seq, prev);
  if (head) {
    await db.updateTable('audit_head').set({ seq, hash: prev, mac }).where('id', '=', HEAD_ID).execute();
  } else {
    await db.insertInto('audit_head').values({ id: HEAD_ID, seq, hash: prev, mac }).execute();
  }
}

export async function listAudit(db: Db, userId: string, limit = 1000): Promise<AuditRecord[]> {
  const rows = await db
    .selectFrom('audit')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('seq', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    timestamp: new Date(Number(r.timestamp)).toISOString(),
    user_id: r.user_id,
    ...(r.vendor_id ? { vendor_id: r.vendor_id } : {}),
    attribute_name: r.attribute_name,
    operation: r.operation,
    ip_address: r.ip_address,
    user_agent: r.user_agent,
    result: r.result,
  }));
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
    const page = await db
      .selectFrom('audit')
      .selectAll()
      .where('seq', '>', after)
      .orderBy('seq')
      .limit(5000)
      .execute();
    if (page.length === 0) break;
    for (const r of page) {
      const seq = Number(r.seq);
      rows += 1;
      if (seq !== expectedSeq)
        problems.push({ seq, problem: `expected seq ${expectedSeq} (row missing or reordered)` });
      if (r.prev_hash !== prev)
        problems.push({ seq, problem: 'prev_hash does not link to the previous row' });
      const fields: RowFields = { ...r, seq, timestamp: Number(r.timestamp) };
      if (rowHash(fields) !== r.hash)
        problems.push({ seq, problem: 'row content does not match its hash (edited)' });
      prev = r.hash;
      expectedSeq = seq + 1;
      after = seq;
    }
  }
  const head = await db.selectFrom('audit_head').selectAll().where('id', '=', HEAD_ID).executeTakeFirst();
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
    await trx
      .updateTable('audit_head')
      .set((eb) => ({ seq: eb.ref('seq') }))
      .where('id', '=', HEAD_ID)
      .execute();
    const head = await trx.selectFrom('audit_head').selectAll().where('id', '=', HEAD_ID).executeTakeFirst();
    if (!head || head.mac === '') return false;
    const mac = to.mac('audit-head', `${Number(head.seq)}:${head.hash}`);
    await trx.updateTable('audit_head').set({ mac }).where('id', '=', HEAD_ID).execute();
    return true;
  });
}
