import type { AppContext } from '../context.ts';
import type { Db } from '../db/index.ts';
import { resignAnchorFile } from '../modules/audit/anchor.ts';
import { verifyAuditChain } from '../modules/audit/service.ts';
import { readResult } from '../modules/auth-contexts/service.ts';
import { recallAnswer } from '../modules/pvs/idempotency.ts';
import { Keyring, seal } from './keyring.ts';

/**
 * Master key rotation (docs/deployment.md §4): everything the master key protects is moved from the old
 * key to the new one.
 *
 * - users' data keys: unwrapped with the old key, wrapped with the new one; data keys themselves, and all
 *   attributes, templates and token shares sealed under them, do not change;
 * - sealed auth results (`auth_contexts.result_enc`) and kiosk answers kept for idempotency: re-sealed under
 *   the new key's sub-keys;
 * - the audit chain head: verified under the old key first (a tampered log is not re-signed), then
 *   re-signed under the new one.
 *
 * Work goes in batches, each one short transaction, ordered by primary key. Every write is a
 * compare-and-set on the old ciphertext, so a concurrent erasure (which nulls the wrapped key) wins, and
 * a rerun after an interruption skips what is already done (rows that the new key opens). The server
 * reads one master key, so run this with every instance stopped, then start them with the new key.
 */
export interface RotationReport {
  users: { rewrapped: number; already: number; erased: number };
  results: { resealed: number; already: number };
  idempotency: { resealed: number; already: number; expired: number };
  audit: { rows: number; resigned: boolean };
  /** the audit anchor file (docs/reliability.md), when `anchorFile` was given */
  anchor?: 'resigned' | 'already' | 'absent' | 'invalid';
}

export interface RotationOptions {
  batchSize?: number;
  now?: number;
  onProgress?: (what: string, done: number) => void;
  /** audit anchor file to re-sign under the new key once the chain verifies */
  anchorFile?: string;
}

const DAY_MS = 86_400_000;
const HEAD_ID = 1;

function opens(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch {
    return false;
  }
}

export async function rotateMasterKey(
  db: Db,
  oldKey: Uint8Array,
  newKey: Uint8Array,
  options: RotationOptions = {},
): Promise<RotationReport> {
  if (Buffer.from(oldKey).equals(Buffer.from(newKey)))
    throw new Error('the new master key equals the old one');
  const from = new Keyring(oldKey);
  const to = new Keyring(newKey);
  const batch = options.batchSize ?? 500;
  const now = options.now ?? Date.now();
  const progress = options.onProgress ?? (() => {});
  const report: RotationReport = {
    users: { rewrapped: 0, already: 0, erased: 0 },
    results: { resealed: 0, already: 0 },
    idempotency: { resealed: 0, already: 0, expired: 0 },
    audit: { rows: 0, resigned: false },
  };

  // A tampered log must not get a fresh signature: check it under the old key before anything changes.
  // (On a rerun after a completed rotation the head is already signed under the new key.)
  const before = await verifyAuditChain(db, from);
  if (!before.ok && !(await verifyAuditChain(db, to)).ok) {
    throw new Error(
      `audit chain does not verify under the old key (${before.problems[0]?.problem ?? 'unknown problem'}); nothing rotated`,
    );
  }

  // 1. Users' data keys.
  for (let after = ''; ; ) {
    const rows = await db
      .selectFrom('users')
      .select(['id', 'wrapped_key'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(batch)
      .execute();
    if (rows.length === 0) break;
    await db.transaction().execute(async (trx) => {
      for (const r of rows) {
        if (!r.wrapped_key) {
          report.users.erased++;
          continue;
        }
        if (opens(() => to.unwrap(r.id, r.wrapped_key!))) {
          report.users.already++;
          continue;
        }
        const dataKey = from.unwrap(r.id, r.wrapped_key);
        const wrapped = seal(newKey, dataKey, `dek:${r.id}`);
        to.unwrap(r.id, wrapped); // the format is the keyring's: prove it before writing
        const res = await trx
          .updateTable('users')
          .set({ wrapped_key: wrapped })
          .where('id', '=', r.id)
          .where('wrapped_key', '=', r.wrapped_key)
          .executeTakeFirst();
        if (Number(res.numUpdatedRows) === 1) report.users.rewrapped++;
        else report.users.erased++;
      }
    });
    after = rows.at(-1)!.id;
    progress('users', report.users.rewrapped + report.users.already + report.users.erased);
  }

  // 2. Sealed auth results.
  const fromCtx = { keyring: from } as AppContext;
  const toCtx = { keyring: to } as AppContext;
  for (let after = ''; ; ) {
    const rows = await db
      .selectFrom('auth_contexts')
      .selectAll()
      .where('id', '>', after)
      .where('result_enc', 'is not', null)
      .orderBy('id')
      .limit(batch)
      .execute();
    if (rows.length === 0) break;
    await db.transaction().execute(async (trx) => {
      for (const r of rows) {
        if (opens(() => readResult(toCtx, r))) {
          report.results.already++;
          continue;
        }
        const result = readResult(fromCtx, r)!;
        const sealed = seal(
          to.derive('auth-results'),
          Buffer.from(JSON.stringify(result), 'utf8'),
          `auth-result:${r.id}`,
        );
        readResult(toCtx, { ...r, result_enc: sealed });
        await trx
          .updateTable('auth_contexts')
          .set({ result_enc: sealed })
          .where('id', '=', r.id)
          .where('result_enc', '=', r.result_enc)
          .execute();
        report.results.resealed++;
      }
    });
    after = rows.at(-1)!.id;
    progress('auth results', report.results.resealed + report.results.already);
  }

  // 3. Kiosk answers kept for idempotency (24 h); expired ones are dropped rather than carried over.
  await db
    .deleteFrom('idempotency')
    .where('created_at', '<', now - DAY_MS)
    .executeTakeFirst()
    .then((r) => {
      report.idempotency.expired = Number(r.numDeletedRows);
    });
  for (let after = ''; ; ) {
    const rows = await db
      .selectFrom('idempotency')
      .selectAll()
      .where('key', '>', after)
      .orderBy('key')
      .limit(batch)
      .execute();
    if (rows.length === 0) break;
    await db.transaction().execute(async (trx) => {
      const ctxAt = (keyring: Keyring) => ({ keyring, now: () => now }) as AppContext;
      for (const r of rows) {
        if (await recallAnswer(ctxAt(to), trx, r.key).catch(() => undefined)) {
          report.idempotency.already++;
          continue;
        }
        const answer = await recallAnswer(ctxAt(from), trx, r.key);
        const sealed = seal(
          to.derive('idempotency'),
          Buffer.from(JSON.stringify(answer), 'utf8'),
          r.key,
        ).toString('base64');
        await trx
          .updateTable('idempotency')
          .set({ response: sealed })
          .where('key', '=', r.key)
          .where('response', '=', r.response)
          .execute();
        report.idempotency.resealed++;
      }
    });
    after = rows.at(-1)!.key;
  }

  // 4. The audit chain head, re-signed under the new key (rows themselves carry no key).
  await db.transaction().execute(async (trx) => {
    // Same lock discipline as the audit writer: take the head row first.
    await trx
      .updateTable('audit_head')
      .set((eb) => ({ seq: eb.ref('seq') }))
      .where('id', '=', HEAD_ID)
      .execute();
    const head = await trx.selectFrom('audit_head').selectAll().where('id', '=', HEAD_ID).executeTakeFirst();
    if (head && head.mac !== '') {
      const mac = to.mac('audit-head', `${Number(head.seq)}:${head.hash}`);
      await trx.updateTable('audit_head').set({ mac }).where('id', '=', HEAD_ID).execute();
      report.audit.resigned = true;
    }
  });
  const after = await verifyAuditChain(db, to);
  if (!after.ok)
    throw new Error(`audit chain does not verify under the new key: ${after.problems[0]?.problem}`);
  report.audit.rows = after.rows;
  if (options.anchorFile) report.anchor = resignAnchorFile(options.anchorFile, from, to);
  return report;
}
