import { type Kysely, type Migration, type MigrationProvider, sql } from 'kysely';
import type { DbKind } from './schema.ts';

/**
 * Migrations as code, shared by SQLite and PostgreSQL. Only the binary column type differs.
 * Append new migrations; never edit a released one.
 */
function migrations(kind: DbKind): Record<string, Migration> {
  const bin = kind === 'postgres' ? 'bytea' : 'blob';
  return {
    '0001_initial': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('vendors')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('url', 'text', (c) => c.notNull())
          .addColumn('mode', 'text', (c) => c.notNull())
          .addColumn('scopes', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('api_keys')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('vendor_id', 'text', (c) => c.notNull().references('vendors.id'))
          .addColumn('key_hash', 'text', (c) => c.notNull().unique())
          .addColumn('prefix', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('revoked_at', 'bigint')
          .execute();
        await db.schema
          .createTable('users')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('created_by_vendor', 'text')
          .addColumn('registration_date', 'bigint', (c) => c.notNull())
          .addColumn('ledger_id', 'text', (c) => c.notNull().unique())
          .addColumn('token_share_enc', bin, (c) => c.notNull())
          .addColumn('wrapped_key', bin)
          .addColumn('last_auth', 'bigint')
          .addColumn('erased_at', 'bigint')
          .execute();
        await db.schema
          .createTable('user_tokens')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('token_hash', 'text', (c) => c.notNull().unique())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('revoked_at', 'bigint')
          .execute();
        await db.schema
          .createTable('claim_codes')
          .addColumn('code_hash', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('used_at', 'bigint')
          .execute();
        await db.schema
          .createTable('palms')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('hand', 'text', (c) => c.notNull())
          .addColumn('template_enc', bin, (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('palms_user').on('palms').column('user_id').execute();
        await db.schema
          .createTable('attributes')
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('value_enc', bin, (c) => c.notNull())
          .addColumn('client_encrypted', 'integer', (c) => c.notNull())
          .addColumn('valid_from', 'bigint')
          .addColumn('valid_until', 'bigint')
          .addColumn('verified_by', 'text')
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('attributes_pk', ['user_id', 'name'])
          .execute();
        await db.schema
          .createTable('consents')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('vendor_id', 'text', (c) => c.notNull())
          .addColumn('attributes', 'text', (c) => c.notNull())
          .addColumn('granted_at', 'bigint', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('revocable', 'integer', (c) => c.notNull())
          .addColumn('audit_log', 'integer', (c) => c.notNull())
          .addColumn('revoked_at', 'bigint')
          .execute();
        await db.schema
          .createIndex('consents_user')
          .on('consents')
          .columns(['user_id', 'vendor_id'])
          .execute();
        await db.schema
          .createTable('auth_contexts')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('vendor_id', 'text', (c) => c.notNull())
          .addColumn('type', 'text', (c) => c.notNull())
          .addColumn('amount', 'bigint')
          .addColumn('currency', 'text')
          .addColumn('minimum_age', 'integer')
          .addColumn('attributes_required', 'text', (c) => c.notNull())
          .addColumn('attributes_optional', 'text', (c) => c.notNull())
          .addColumn('pvs_id', 'text')
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('result_enc', bin)
          .addColumn('user_id', 'text')
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema
          .createIndex('auth_contexts_status')
          .on('auth_contexts')
          .columns(['status', 'expires_at'])
          .execute();
        await db.schema
          .createTable('ledger')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('ledger_user_id', 'text', (c) => c.notNull())
          .addColumn('vendor_id', 'text', (c) => c.notNull())
          .addColumn('context_id', 'text', (c) => c.notNull())
          .addColumn('timestamp', 'bigint', (c) => c.notNull())
          .addColumn('tx', 'text', (c) => c.notNull())
          .execute();
        await db.schema
          .createIndex('ledger_lookup')
          .on('ledger')
          .columns(['ledger_user_id', 'vendor_id', 'timestamp'])
          .execute();
        await db.schema
          .createTable('audit')
          .addColumn('seq', 'bigint', (c) => c.primaryKey())
          .addColumn('id', 'text', (c) => c.notNull().unique())
          .addColumn('timestamp', 'bigint', (c) => c.notNull())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('vendor_id', 'text')
          .addColumn('attribute_name', 'text', (c) => c.notNull())
          .addColumn('operation', 'text', (c) => c.notNull())
          .addColumn('ip_address', 'text', (c) => c.notNull())
          .addColumn('user_agent', 'text', (c) => c.notNull())
          .addColumn('result', 'text', (c) => c.notNull())
          .addColumn('prev_hash', 'text', (c) => c.notNull())
          .addColumn('hash', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('audit_user').on('audit').columns(['user_id', 'seq']).execute();
        await db.schema
          .createTable('audit_head')
          .addColumn('id', 'integer', (c) => c.primaryKey())
          .addColumn('seq', 'bigint', (c) => c.notNull())
          .addColumn('hash', 'text', (c) => c.notNull())
          .addColumn('mac', 'text', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('pvs')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('vendor_id', 'text')
          .addColumn('token_hash', 'text', (c) => c.notNull().unique())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('last_seen', 'bigint')
          .addColumn('revoked_at', 'bigint')
          .execute();
        await db.schema
          .createTable('idempotency')
          .addColumn('key', 'text', (c) => c.primaryKey())
          .addColumn('response', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .execute();
      },
    },
    '0002_seed_audit_head': {
      // The audit writer serialises on an UPDATE of this row; if the row did not exist yet, two first writers
      // on PostgreSQL would both try to INSERT it. Seeding it here (unsigned: no key at migration time; the
      // first append signs it) removes that race. Existing logs keep their head.
      async up(db: Kysely<unknown>) {
        await (db as Kysely<{ audit_head: { id: number; seq: number; hash: string; mac: string } }>)
          .insertInto('audit_head')
          .values({ id: 1, seq: 0, hash: '0'.repeat(64), mac: '' })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      },
    },
    '0003_verification': {
      // Registered verifiers (admin `verifier create`; only the public key is stored) and the openings of
      // zero-knowledge proof commitments (sealed under the user's data key), owned by modules/verification.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('verifiers')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('public_jwk', 'text', (c) => c.notNull())
          .addColumn('kid', 'text', (c) => c.notNull())
          .addColumn('attributes', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('revoked_at', 'bigint')
          .execute();
        await db.schema
          .createTable('zk_openings')
          .addColumn('auth_id', 'text', (c) => c.notNull())
          .addColumn('attribute', 'text', (c) => c.notNull())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('commitment', 'text', (c) => c.notNull())
          .addColumn('opening_enc', bin, (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('zk_openings_pk', ['auth_id', 'attribute'])
          .execute();
        await db.schema.createIndex('zk_openings_user').on('zk_openings').column('user_id').execute();
        // Accepted attestations, kept (sealed under the user's data key) to show a verified value's origin.
        await db.schema
          .createTable('attestations')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('attribute', 'text', (c) => c.notNull())
          .addColumn('verifier_id', 'text', (c) => c.notNull())
          .addColumn('token_enc', bin, (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('attestations_user').on('attestations').column('user_id').execute();
        // Predicates a vendor asked for in an auth context (`predicates: [{type: "in_set", …}]`), as JSON.
        await db.schema
          .createTable('auth_context_predicates')
          .addColumn('auth_id', 'text', (c) => c.primaryKey())
          .addColumn('predicates', 'text', (c) => c.notNull())
          .execute();
      },
    },
    '0004_kiosk_lockouts': {
      // The kiosk lockout lived in each process's memory: a restart, or a reconnect to another instance,
      // cleared it. One row per kiosk with its recent failures and the lock's end.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('kiosk_lockouts')
          .addColumn('pvs_id', 'text', (c) => c.primaryKey())
          .addColumn('failures', 'text', (c) => c.notNull())
          .addColumn('locked_until', 'bigint', (c) => c.notNull())
          .execute();
      },
    },
    '0005_credential_epoch': {
      // Every change to a key or a vendor announces itself, so that verified-key caches on every instance
      // drop what they hold at once (db/credential-watch.ts). SQLite counts in a row read per request;
      // PostgreSQL sends a NOTIFY with the commit.
      async up(db: Kysely<unknown>) {
        if (kind === 'postgres') {
          await sql`create function palmid_credentials_changed() returns trigger language plpgsql as $$
            begin perform pg_notify('palmid_credentials', ''); return null; end $$`.execute(db);
          for (const table of ['api_keys', 'vendors']) {
            await sql`create trigger ${sql.raw(`${table}_credentials_changed`)} after update or delete
              on ${sql.table(table)} for each statement execute function palmid_credentials_changed()`.execute(
              db,
            );
          }
          return;
        }
        await db.schema
          .createTable('credential_epoch')
          .addColumn('id', 'integer', (c) => c.primaryKey())
          .addColumn('n', 'integer', (c) => c.notNull())
          .execute();
        await sql`insert into credential_epoch (id, n) values (1, 0)`.execute(db);
        for (const table of ['api_keys', 'vendors']) {
          for (const op of ['update', 'delete']) {
            await sql`create trigger ${sql.raw(`${table}_${op}_credentials_changed`)} after ${sql.raw(op)}
              on ${sql.table(table)} begin update credential_epoch set n = n + 1 where id = 1; end`.execute(
              db,
            );
          }
        }
      },
    },
    '0006_palm_confirmations': {
      // A palm is added to an existing user only with the user's one-time code (docs/security.md).
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('palm_confirmations')
          .addColumn('code_hash', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('used_at', 'bigint')
          .execute();
        await db.schema
          .createIndex('palm_confirmations_user')
          .on('palm_confirmations')
          .column('user_id')
          .execute();
      },
    },
    '0007_ledger_owner': {
      // Ledger ids are per vendor (docs/vendor-api.md, "Ledger"): `ledger_user_id` holds the id the vendor
      // sees, `owner_id` the user's internal id (export, erasure, loyalty tier). Older rows keep theirs.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('ledger').addColumn('owner_id', 'text').execute();
        await sql`update ledger set owner_id = ledger_user_id`.execute(db);
        await db.schema.createIndex('ledger_owner').on('ledger').columns(['owner_id', 'timestamp']).execute();
      },
    },
    '0008_idempotency_owner': {
      // Kiosk answers about a user are sealed under that user's data key and erased with the user
      // (modules/kiosk-link/idempotency.ts); expired ones are pruned by age.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('idempotency').addColumn('user_id', 'text').execute();
        await db.schema.createIndex('idempotency_user').on('idempotency').column('user_id').execute();
        await db.schema.createIndex('idempotency_age').on('idempotency').column('created_at').execute();
      },
    },
    '0009_minimum_age_source': {
      // A context may accept only a verified birth date for its age check (docs/zk-proofs.md).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('auth_contexts').addColumn('minimum_age_source', 'text').execute();
      },
    },
    '0010_oidc_binding': {
      // Identity-provider import (modules/verification/service.ts): single-use server nonces, and each
      // (issuer, subject) bound to the one user who imported it first.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('oidc_nonces')
          .addColumn('nonce_hash', 'text', (c) => c.primaryKey())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('oidc_subjects')
          .addColumn('issuer', 'text', (c) => c.notNull())
          .addColumn('subject', 'text', (c) => c.notNull())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('oidc_subjects_pk', ['issuer', 'subject'])
          .execute();
      },
    },
    '0011_capture_devices': {
      // Attested captures (modules/devices, docs/security.md): each capture device's registered Ed25519
      // public key, its one-time provisioning secret (hashed) and the highest counter accepted; and the
      // single-use server nonces handed out with scan.request and enroll.begin.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('capture_keys')
          .addColumn('pvs_id', 'text', (c) => c.primaryKey())
          .addColumn('public_key', 'text')
          .addColumn('provisioning_hash', 'text')
          .addColumn('last_counter', 'bigint', (c) => c.notNull())
          .addColumn('bound_at', 'bigint')
          .addColumn('updated_at', 'bigint', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('capture_nonces')
          .addColumn('nonce', 'text', (c) => c.primaryKey())
          .addColumn('pvs_id', 'text', (c) => c.notNull())
          .addColumn('purpose', 'text', (c) => c.notNull())
          .addColumn('subject', 'text', (c) => c.notNull())
          .addColumn('expires_at', 'bigint', (c) => c.notNull())
          .addColumn('used_at', 'bigint')
          .execute();
        await db.schema.createIndex('capture_nonces_pvs').on('capture_nonces').column('pvs_id').execute();
      },
    },
    '0050_palm_source': {
      // Users list their palms with where each was enrolled (docs/user-api.md, "Palms"): `kiosk:<pvs_id>`
      // or `vendor:<vendor_id>`; palms enrolled before this migration have none (shown as unknown).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('palms').addColumn('source', 'text').execute();
      },
    },
    '0051_vendor_user_ids': {
      // The internal user id never reaches a vendor (docs/vendor-api.md, "User ids"): each (user, vendor)
      // pair has its own UUID v4. Migration: the vendor that created a user keeps the id it already holds
      // (its stored ids keep working); every other pair gets a fresh id the first time one is needed.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('vendor_user_ids')
          .addColumn('vendor_id', 'text', (c) => c.notNull())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('vendor_user_id', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('vendor_user_ids_pk', ['vendor_id', 'user_id'])
          .addUniqueConstraint('vendor_user_ids_scoped', ['vendor_id', 'vendor_user_id'])
          .execute();
        await db.schema.createIndex('vendor_user_ids_user').on('vendor_user_ids').column('user_id').execute();
        await sql`insert into vendor_user_ids (vendor_id, user_id, vendor_user_id, created_at)
          select created_by_vendor, id, id, registration_date from users
          where created_by_vendor is not null and erased_at is null`.execute(db);
      },
    },
    '0052_in_set_asks': {
      // The distinct sets a vendor asked about one user's attribute (docs/zk-proofs.md, "Set predicates"),
      // as a digest of the sorted set, to bound how many a vendor may ask. Erased with the user.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('in_set_asks')
          .addColumn('vendor_id', 'text', (c) => c.notNull())
          .addColumn('user_id', 'text', (c) => c.notNull())
          .addColumn('attribute', 'text', (c) => c.notNull())
          .addColumn('set_digest', 'text', (c) => c.notNull())
          .addColumn('asked_at', 'bigint', (c) => c.notNull())
          .addPrimaryKeyConstraint('in_set_asks_pk', ['vendor_id', 'user_id', 'attribute', 'set_digest'])
          .execute();
        await db.schema.createIndex('in_set_asks_user').on('in_set_asks').column('user_id').execute();
      },
    },
    '0053_audit_sealed': {
      // Audit rows whose personal fields (user, vendor, IP, User-Agent) the chain covers through a salted
      // digest, IP and User-Agent sealed under the user's data key (modules/audit/service.ts, hash version
      // 2), so an erasure can clear them and the chain still verifies. Rows written before keep version 1.
      async up(db: Kysely<unknown>) {
        await db.schema
          .alterTable('audit')
          .addColumn('hv', 'integer', (c) => c.notNull().defaultTo(1))
          .execute();
        await db.schema.alterTable('audit').addColumn('personal_enc', bin).execute();
        await db.schema.alterTable('audit').addColumn('personal_salt', 'text').execute();
        await db.schema.alterTable('audit').addColumn('personal_digest', 'text').execute();
      },
    },
    '0054_palms_changed_at': {
      // When a user last lost a palm (DELETE /v1/palms/{id}): an instance that missed the event while cut
      // off from the hub reloads such users when it catches up (modules/users/gallery.ts).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('users').addColumn('palms_changed_at', 'bigint').execute();
      },
    },
    '0060_result_values_until': {
      // Disclosed values do not linger (docs/security.md): when the stored result of a context must hold
      // attribute names only (at most 1 h after it ended); null when it holds no value. Results stored
      // before this migration get the hour from now.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('auth_contexts').addColumn('values_until', 'bigint').execute();
        await sql`update auth_contexts set values_until = ${Date.now() + 3_600_000} where result_enc is not null`.execute(
          db,
        );
        await db.schema
          .createIndex('auth_contexts_values_until')
          .on('auth_contexts')
          .column('values_until')
          .execute();
      },
    },
    '0070_webhooks': {
      // Signed webhooks (modules/webhooks, docs/vendor-api.md "Webhooks"): each vendor's endpoints (the
      // signing secret sealed under a derived key) and the outbox, one row per event and endpoint. `seq`
      // orders the events of one context; a sender claims a row with a lease (any instance, restarts
      // included), and the row is the delivery log.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('webhook_endpoints')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('vendor_id', 'text', (c) => c.notNull())
          .addColumn('url', 'text', (c) => c.notNull())
          .addColumn('events', 'text', (c) => c.notNull())
          .addColumn('secret_enc', bin, (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('deleted_at', 'bigint')
          .execute();
        await db.schema
          .createIndex('webhook_endpoints_vendor')
          .on('webhook_endpoints')
          .column('vendor_id')
          .execute();
        await db.schema
          .createTable('webhook_deliveries')
          .addColumn('seq', kind === 'postgres' ? 'bigserial' : 'integer', (c) =>
            kind === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
          )
          .addColumn('id', 'text', (c) => c.notNull().unique())
          .addColumn('event_id', 'text', (c) => c.notNull())
          .addColumn('endpoint_id', 'text', (c) => c.notNull())
          .addColumn('vendor_id', 'text', (c) => c.notNull())
          .addColumn('type', 'text', (c) => c.notNull())
          .addColumn('context_id', 'text', (c) => c.notNull())
          .addColumn('payload', 'text', (c) => c.notNull())
          .addColumn('created_at', 'bigint', (c) => c.notNull())
          .addColumn('state', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull())
          .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
          .addColumn('lease_owner', 'text')
          .addColumn('lease_until', 'bigint')
          .addColumn('last_attempt_at', 'bigint')
          .addColumn('last_status', 'integer')
          .addColumn('last_error', 'text')
          .addColumn('delivered_at', 'bigint')
          .addColumn('replay_of', 'text')
          .execute();
        await db.schema
          .createIndex('webhook_deliveries_due')
          .on('webhook_deliveries')
          .columns(['state', 'next_attempt_at'])
          .execute();
        await db.schema
          .createIndex('webhook_deliveries_order')
          .on('webhook_deliveries')
          .columns(['endpoint_id', 'context_id', 'seq'])
          .execute();
        await db.schema
          .createIndex('webhook_deliveries_vendor')
          .on('webhook_deliveries')
          .columns(['vendor_id', 'seq'])
          .execute();
      },
    },
  };
}

export function migrationProvider(kind: DbKind): MigrationProvider {
  return { getMigrations: async () => migrations(kind) };
}
