import { Keyring } from '../crypto/keyring.ts';
import type { Db } from '../db/index.ts';
import { resignAnchorFile } from '../modules/audit/anchor.ts';
import { resignHead, verifyAuditChain } from '../modules/audit/service.ts';
import { resealResults } from '../modules/auth-contexts/state.ts';
import { resealAnswers } from '../modules/kiosk-link/idempotency.ts';
import { rewrapDataKeys } from '../modules/users/service.ts';
import { resealSecrets } from '../modules/webhooks/service.ts';

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
  /** webhook endpoints' signing secrets */
  webhooks: { resealed: number; already: number };
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
    webhooks: { resealed: 0, already: 0 },
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

  // Each module re-seals its own part.
  report.users = await rewrapDataKeys(db, from, to, batch, progress);
  report.results = await resealResults(db, from, to, batch, progress);
  report.idempotency = await resealAnswers(db, from, to, now, batch);
  report.webhooks = await resealSecrets(db, { keyring: from }, { keyring: to });
  report.audit.resigned = await resignHead(db, to);
  const after = await verifyAuditChain(db, to);
  if (!after.ok)
    throw new Error(`audit chain does not verify under the new key: ${after.problems[0]?.problem}`);
  report.audit.rows = after.rows;
  if (options.anchorFile) report.anchor = resignAnchorFile(options.anchorFile, from, to);
  return report;
}
