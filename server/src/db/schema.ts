import type { Generated, Kysely, Transaction } from 'kysely';

/** Row types of every table. Times are Unix milliseconds (integers). Binary columns hold ciphertext. */
export interface VendorsTable {
  id: string;
  name: string;
  url: string;
  mode: 'test' | 'live';
  scopes: string; // comma separated
  created_at: number;
}

export interface ApiKeysTable {
  id: string;
  vendor_id: string;
  key_hash: string;
  prefix: string;
  status: 'active' | 'revoked';
  created_at: number;
  revoked_at: number | null;
}

export interface UsersTable {
  id: string;
  created_by_vendor: string | null;
  registration_date: number;
  ledger_id: string;
  token_share_enc: Uint8Array;
  wrapped_key: Uint8Array | null;
  last_auth: number | null;
  erased_at: number | null;
  /** when a palm was last removed (migration 0054), for instances catching up on missed events */
  palms_changed_at: number | null;
}

export interface UserTokensTable {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export interface ClaimCodesTable {
  code_hash: string;
  user_id: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/** One-time codes a user gets at `POST /v1/palms/confirm` to let a palm be added (docs/security.md). */
export interface PalmConfirmationsTable {
  code_hash: string;
  user_id: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface PalmsTable {
  id: string;
  user_id: string;
  hand: 'left' | 'right';
  template_enc: Uint8Array;
  created_at: number;
  /** where it was enrolled: `kiosk:<pvs_id>` or `vendor:<vendor_id>`; null before migration 0050 */
  source: string | null;
}

/** The id one vendor sees for a user (migration 0051; docs/vendor-api.md, "User ids"). */
export interface VendorUserIdsTable {
  vendor_id: string;
  user_id: string;
  vendor_user_id: string;
  created_at: number;
}

/** The distinct `in_set` sets a vendor asked about a user's attribute (migration 0052). */
export interface InSetAsksTable {
  vendor_id: string;
  user_id: string;
  attribute: string;
  set_digest: string;
  asked_at: number;
}

export interface AttributesTable {
  user_id: string;
  name: string;
  kind: 'user' | 'verified';
  value_enc: Uint8Array;
  client_encrypted: number;
  valid_from: number | null;
  valid_until: number | null;
  verified_by: string | null;
  updated_at: number;
}

export interface ConsentsTable {
  id: string;
  user_id: string;
  vendor_id: string;
  attributes: string; // JSON [{name, purpose, retention_days}]
  granted_at: number;
  expires_at: number;
  revocable: number;
  audit_log: number;
  revoked_at: number | null;
}

export interface AuthContextsTable {
  id: string;
  vendor_id: string;
  type: 'payment' | 'entrance' | 'login';
  amount: number | null;
  currency: string | null;
  minimum_age: number | null;
  /** 'verified' or null (any source) */
  minimum_age_source: string | null;
  attributes_required: string; // JSON array
  attributes_optional: string; // JSON array
  pvs_id: string | null;
  status: 'pending' | 'scanning' | 'completed' | 'failed' | 'cancelled' | 'expired';
  result_enc: Uint8Array | null;
  user_id: string | null;
  created_at: number;
  expires_at: number;
  updated_at: number;
  /** when the stored result must hold attribute names only; null when it holds no value */
  values_until: number | null;
}

export interface OidcNoncesTable {
  nonce_hash: string;
  user_id: string;
  expires_at: number;
}

export interface OidcSubjectsTable {
  issuer: string;
  subject: string;
  user_id: string;
  created_at: number;
}

export interface LedgerTable {
  id: string;
  ledger_user_id: string;
  /** The user's internal ledger id (`users.ledger_id`), never disclosed; null only before migration 0007. */
  owner_id: string | null;
  vendor_id: string;
  context_id: string;
  timestamp: number;
  tx: string; // canonical JSON of the ledger transaction (docs/vendor-api.md, "Ledger")
}

export interface AuditTable {
  seq: number;
  id: string;
  timestamp: number;
  user_id: string;
  vendor_id: string | null;
  attribute_name: string;
  operation: 'READ' | 'UPDATE' | 'DELETE';
  ip_address: string;
  user_agent: string;
  result: 'SUCCESS' | 'DENIED' | 'ERROR';
  prev_hash: string;
  hash: string;
  /** hash version: 1 covers every field; 2 covers `personal_digest` instead of the personal fields */
  hv: number;
  /** version 2: `[ip_address, user_agent]` of a row about a live user, sealed under the user's data key */
  personal_enc: Uint8Array | null;
  /** version 2: random per-row salt of the digest; null once an erasure shredded the row */
  personal_salt: string | null;
  /** version 2: SHA-256 of the salt, user, vendor, IP address, User-Agent and sealed copy */
  personal_digest: string | null;
}

export interface AuditHeadTable {
  id: number;
  seq: number;
  hash: string;
  mac: string;
}

export interface PvsTable {
  id: string;
  name: string;
  vendor_id: string | null;
  token_hash: string;
  created_at: number;
  last_seen: number | null;
  revoked_at: number | null;
}

export interface IdempotencyTable {
  key: string;
  response: string;
  created_at: number;
  /** The user the answer is about: sealed under that user's data key, erased with the user. */
  user_id: string | null;
}

/** Kiosk lockout after repeated failed matches (modules/kiosk-link/lockout.ts), shared by instances and restarts. */
export interface KioskLockoutsTable {
  pvs_id: string;
  /** JSON array of the failure times (ms) in the current window */
  failures: string;
  locked_until: number;
}

/** A capture device's registered key (modules/devices), one row per kiosk or capture host. */
export interface CaptureKeysTable {
  pvs_id: string;
  /** raw Ed25519 public key, base64url; null until the device's first hello binds it */
  public_key: string | null;
  /** SHA-256 of the one-time provisioning secret; null once used */
  provisioning_hash: string | null;
  /** highest device counter accepted (0: none yet) */
  last_counter: number;
  bound_at: number | null;
  updated_at: number;
}

/** Single-use server nonces for captures (scan.request, enroll.begin). */
export interface CaptureNoncesTable {
  nonce: string;
  pvs_id: string;
  purpose: string;
  /** auth_id or enrolment_id the nonce was issued for */
  subject: string;
  expires_at: number;
  used_at: number | null;
}

/** Verification module (migration 0003_verification): registered attestation issuers. */
export interface VerifiersTable {
  id: string;
  name: string;
  /** Ed25519 public JWK `{kty, crv, x}` as JSON; the private half is printed once and never stored. */
  public_jwk: string;
  /** RFC 7638 thumbprint of the key, the attestation header's `kid`. */
  kid: string;
  /** Comma-separated verified attribute names this verifier may attest. */
  attributes: string;
  created_at: number | bigint;
  revoked_at: number | bigint | null;
}

export interface ZkOpeningsTable {
  auth_id: string;
  /** `date_of_birth` or the in_set attribute. */
  attribute: string;
  user_id: string;
  commitment: string;
  /** `{attribute, value, salt}` sealed under the user's data key (AAD names the context and attribute). */
  opening_enc: Uint8Array;
  created_at: number | bigint;
}

export interface AttestationsTable {
  id: string;
  user_id: string;
  attribute: string;
  verifier_id: string;
  /** The compact JWS as submitted, sealed under the user's data key. */
  token_enc: Uint8Array;
  created_at: number | bigint;
}

/** The in_set predicates of a context (docs/zk-proofs.md), JSON. */
export interface AuthContextPredicatesTable {
  auth_id: string;
  predicates: string;
}

/** A vendor's webhook endpoint (modules/webhooks); the signing secret is sealed, shown once at creation. */
export interface WebhookEndpointsTable {
  id: string;
  vendor_id: string;
  url: string;
  /** JSON array of event types */
  events: string;
  secret_enc: Uint8Array;
  created_at: number;
  deleted_at: number | null;
}

/** The webhook outbox and delivery log: one row per event and endpoint. */
export interface WebhookDeliveriesTable {
  /** commit order (autoincrement / bigserial): events of one context are sent in this order */
  seq: Generated<number>;
  id: string;
  event_id: string;
  endpoint_id: string;
  vendor_id: string;
  type: string;
  /** the auth context the event is about (the ordering key) */
  context_id: string;
  /** JSON of what the event says ({auth_id, status}); results are read when sent */
  payload: string;
  created_at: number;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  last_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: number | null;
  replay_of: string | null;
}

export interface DB {
  vendors: VendorsTable;
  api_keys: ApiKeysTable;
  users: UsersTable;
  user_tokens: UserTokensTable;
  claim_codes: ClaimCodesTable;
  palms: PalmsTable;
  attributes: AttributesTable;
  consents: ConsentsTable;
  auth_contexts: AuthContextsTable;
  ledger: LedgerTable;
  oidc_nonces: OidcNoncesTable;
  oidc_subjects: OidcSubjectsTable;
  audit: AuditTable;
  audit_head: AuditHeadTable;
  pvs: PvsTable;
  idempotency: IdempotencyTable;
  kiosk_lockouts: KioskLockoutsTable;
  capture_keys: CaptureKeysTable;
  capture_nonces: CaptureNoncesTable;
  verifiers: VerifiersTable;
  zk_openings: ZkOpeningsTable;
  attestations: AttestationsTable;
  auth_context_predicates: AuthContextPredicatesTable;
  palm_confirmations: PalmConfirmationsTable;
  vendor_user_ids: VendorUserIdsTable;
  in_set_asks: InSetAsksTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
}

/** A database handle or an open transaction: services accept either. */
export type Db = Kysely<DB> | Transaction<DB>;
export type DbKind = 'sqlite' | 'postgres';
