import type { Db } from '../../db/index.ts';
import type { AttestationsTable, InSetAsksTable, VerifiersTable, ZkOpeningsTable } from '../../db/schema.ts';

/**
 * The verification module's tables: registered `verifiers`, sealed `attestations` and proof openings
 * (`zk_openings`), a context's set predicates (`auth_context_predicates`), OpenID Connect import nonces and
 * bound subjects (`oidc_nonces`, `oidc_subjects`), and the sets vendors asked about (`in_set_asks`).
 * service.ts and zk.ts seal, check and decide; only this file names the tables.
 */
export type VerifierRow = VerifiersTable;
export type ZkOpeningRow = ZkOpeningsTable;
export type AttestationRow = AttestationsTable;
export type InSetAskRow = InSetAsksTable;

/** The verification store: every query on the module's tables. */
export interface VerificationStore {
  insertVerifier(row: VerifierRow): Promise<void>;
  /** Every verifier (revoked ones too), oldest first. */
  listVerifiers(): Promise<VerifierRow[]>;
  verifierRevokedAt(id: string): Promise<{ revoked_at: VerifierRow['revoked_at'] } | undefined>;
  markVerifierRevoked(id: string, now: number): Promise<void>;

  insertOpening(row: ZkOpeningRow): Promise<void>;
  openingsOf(authId: string): Promise<ZkOpeningRow[]>;
  insertAttestation(row: AttestationRow): Promise<void>;

  insertPredicates(authId: string, predicatesJson: string): Promise<void>;
  /** The JSON of a context's predicates, if it has any. */
  predicatesOf(authId: string): Promise<string | undefined>;

  /** Deletes the nonces expired at `now`. */
  pruneNonces(now: number): Promise<void>;
  insertNonce(row: { nonce_hash: string; user_id: string; expires_at: number }): Promise<void>;
  /** Deletes the user's nonce if still valid at `now`; false when there was none. */
  consumeNonce(nonceHash: string, userId: string, now: number): Promise<boolean>;
  /** The user an identity-provider subject is bound to. */
  subjectOwner(issuer: string, subject: string): Promise<string | undefined>;
  bindSubject(row: { issuer: string; subject: string; user_id: string; created_at: number }): Promise<void>;

  /** Deletes a vendor's asks about a user's attribute made before a time. */
  pruneSetAsks(q: { vendorId: string; userId: string; attribute: string }, before: number): Promise<void>;
  /** The digests of the sets a vendor asked about a user's attribute. */
  setAskDigests(q: { vendorId: string; userId: string; attribute: string }): Promise<string[]>;
  /** Records an ask unless it is recorded. */
  insertSetAsk(row: InSetAskRow): Promise<void>;

  /** Erasure: the user's openings, attestations, subject bindings, nonces and asks. */
  deleteDataOf(userId: string): Promise<void>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyVerificationStore implements VerificationStore {
  constructor(private readonly db: Db) {}

  async insertVerifier(row: VerifierRow): Promise<void> {
    await this.db.insertInto('verifiers').values(row).execute();
  }

  async listVerifiers(): Promise<VerifierRow[]> {
    return this.db.selectFrom('verifiers').selectAll().orderBy('created_at').execute();
  }

  async verifierRevokedAt(id: string) {
    return this.db.selectFrom('verifiers').select(['revoked_at']).where('id', '=', id).executeTakeFirst();
  }

  async markVerifierRevoked(id: string, now: number): Promise<void> {
    await this.db.updateTable('verifiers').set({ revoked_at: now }).where('id', '=', id).execute();
  }

  async insertOpening(row: ZkOpeningRow): Promise<void> {
    await this.db.insertInto('zk_openings').values(row).execute();
  }

  async openingsOf(authId: string): Promise<ZkOpeningRow[]> {
    return this.db.selectFrom('zk_openings').selectAll().where('auth_id', '=', authId).execute();
  }

  async insertAttestation(row: AttestationRow): Promise<void> {
    await this.db.insertInto('attestations').values(row).execute();
  }

  async insertPredicates(authId: string, predicatesJson: string): Promise<void> {
    await this.db
      .insertInto('auth_context_predicates')
      .values({ auth_id: authId, predicates: predicatesJson })
      .execute();
  }

  async predicatesOf(authId: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('auth_context_predicates')
      .select('predicates')
      .where('auth_id', '=', authId)
      .executeTakeFirst();
    return row?.predicates;
  }

  async pruneNonces(now: number): Promise<void> {
    await this.db.deleteFrom('oidc_nonces').where('expires_at', '<=', now).execute();
  }

  async insertNonce(row: { nonce_hash: string; user_id: string; expires_at: number }): Promise<void> {
    await this.db.insertInto('oidc_nonces').values(row).execute();
  }

  async consumeNonce(nonceHash: string, userId: string, now: number): Promise<boolean> {
    const res = await this.db
      .deleteFrom('oidc_nonces')
      .where('nonce_hash', '=', nonceHash)
      .where('user_id', '=', userId)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(res.numDeletedRows) === 1;
  }

  async subjectOwner(issuer: string, subject: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('oidc_subjects')
      .select('user_id')
      .where('issuer', '=', issuer)
      .where('subject', '=', subject)
      .executeTakeFirst();
    return row?.user_id;
  }

  async bindSubject(row: { issuer: string; subject: string; user_id: string; created_at: number }) {
    await this.db.insertInto('oidc_subjects').values(row).execute();
  }

  async pruneSetAsks(q: { vendorId: string; userId: string; attribute: string }, before: number) {
    await this.db
      .deleteFrom('in_set_asks')
      .where('vendor_id', '=', q.vendorId)
      .where('user_id', '=', q.userId)
      .where('attribute', '=', q.attribute)
      .where('asked_at', '<', before)
      .execute();
  }

  async setAskDigests(q: { vendorId: string; userId: string; attribute: string }): Promise<string[]> {
    const rows = await this.db
      .selectFrom('in_set_asks')
      .select('set_digest')
      .where('vendor_id', '=', q.vendorId)
      .where('user_id', '=', q.userId)
      .where('attribute', '=', q.attribute)
      .execute();
    return rows.map((r) => r.set_digest);
  }

  async insertSetAsk(row: InSetAskRow): Promise<void> {
    await this.db
      .insertInto('in_set_asks')
      .values(row)
      .onConflict((oc) => oc.doNothing())
      .execute();
  }

  async deleteDataOf(userId: string): Promise<void> {
    await this.db.deleteFrom('zk_openings').where('user_id', '=', userId).execute();
    await this.db.deleteFrom('attestations').where('user_id', '=', userId).execute();
    // the identity-provider account is no longer linked: it may be imported by a new account
    await this.db.deleteFrom('oidc_subjects').where('user_id', '=', userId).execute();
    await this.db.deleteFrom('oidc_nonces').where('user_id', '=', userId).execute();
    await this.db.deleteFrom('in_set_asks').where('user_id', '=', userId).execute();
  }
}

export const verificationStore = (db: Db): VerificationStore => new KyselyVerificationStore(db);
