import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/schema.ts';

/** The webhook module's tables (migration 0070_webhooks): endpoints and the outbox / delivery log. */

export type EndpointRow = WebhookEndpointsTable;
export type DeliveryRow = Omit<WebhookDeliveriesTable, 'seq'> & { seq: number };

export interface NewDelivery {
  eventId: string;
  endpointId: string;
  vendorId: string;
  type: string;
  contextId: string;
  payload: string;
  createdAt: number;
  replayOf?: string;
}

export interface AttemptOutcome {
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: number;
  at: number;
  status: number | null;
  error: string | null;
}

/** The webhooks' store: every query on `webhook_endpoints` and `webhook_deliveries`. */
export interface WebhookStore {
  insertEndpoint(row: EndpointRow): Promise<void>;
  activeEndpoints(vendorId: string): Promise<EndpointRow[]>;
  endpointById(id: string): Promise<EndpointRow | undefined>;
  markEndpointDeleted(vendorId: string, id: string, now: number): Promise<boolean>;
  insertDelivery(d: NewDelivery): Promise<string>;
  deliveryById(id: string): Promise<DeliveryRow | undefined>;
  listDeliveries(
    vendorId: string,
    opts: { endpointId?: string; contextId?: string; beforeSeq?: number; limit: number },
  ): Promise<DeliveryRow[]>;
  /**
   * Deliveries a sender may take now: pending, due, not leased (or the lease ran out), and the first
   * pending one of their (endpoint, context), so that the events of one context go out in order.
   */
  dueDeliveries(now: number, limit: number): Promise<DeliveryRow[]>;
  /** Takes a delivery for `owner` until `until` (compare-and-set: one sender among all instances wins). */
  claimDelivery(seq: number, owner: string, now: number, until: number): Promise<boolean>;
  /** Records an attempt of a delivery `owner` holds, and releases it. */
  recordAttempt(seq: number, owner: string, o: AttemptOutcome): Promise<void>;
  allEndpoints(): Promise<EndpointRow[]>;
  replaceSecret(id: string, old: Uint8Array, sealed: Uint8Array): Promise<void>;
  /** Drops finished deliveries (delivered or failed) older than `before`; returns how many. */
  pruneFinished(before: number): Promise<number>;
}

/** The Kysely implementation (SQLite and PostgreSQL); `db` may be an open transaction. */
export class KyselyWebhookStore implements WebhookStore {
  constructor(private readonly db: Db) {}

  async insertEndpoint(row: EndpointRow): Promise<void> {
    await this.db.insertInto('webhook_endpoints').values(row).execute();
  }

  async activeEndpoints(vendorId: string): Promise<EndpointRow[]> {
    return this.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('vendor_id', '=', vendorId)
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .execute();
  }

  async endpointById(id: string): Promise<EndpointRow | undefined> {
    return this.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async markEndpointDeleted(vendorId: string, id: string, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('webhook_endpoints')
      .set({ deleted_at: now })
      .where('id', '=', id)
      .where('vendor_id', '=', vendorId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async insertDelivery(d: NewDelivery): Promise<string> {
    const id = `whd_${randomUUID().replace(/-/g, '')}`;
    await this.db
      .insertInto('webhook_deliveries')
      .values({
        id,
        event_id: d.eventId,
        endpoint_id: d.endpointId,
        vendor_id: d.vendorId,
        type: d.type,
        context_id: d.contextId,
        payload: d.payload,
        created_at: d.createdAt,
        state: 'pending',
        attempts: 0,
        next_attempt_at: d.createdAt,
        lease_owner: null,
        lease_until: null,
        last_attempt_at: null,
        last_status: null,
        last_error: null,
        delivered_at: null,
        replay_of: d.replayOf ?? null,
      })
      .execute();
    return id;
  }

  async deliveryById(id: string): Promise<DeliveryRow | undefined> {
    return (await this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst()) as DeliveryRow | undefined;
  }

  async listDeliveries(
    vendorId: string,
    opts: { endpointId?: string; contextId?: string; beforeSeq?: number; limit: number },
  ): Promise<DeliveryRow[]> {
    let q = this.db.selectFrom('webhook_deliveries').selectAll().where('vendor_id', '=', vendorId);
    if (opts.endpointId) q = q.where('endpoint_id', '=', opts.endpointId);
    if (opts.contextId) q = q.where('context_id', '=', opts.contextId);
    if (opts.beforeSeq !== undefined) q = q.where('seq', '<', opts.beforeSeq);
    return (await q.orderBy('seq', 'desc').limit(opts.limit).execute()) as DeliveryRow[];
  }

  async dueDeliveries(now: number, limit: number): Promise<DeliveryRow[]> {
    return (await this.db
      .selectFrom('webhook_deliveries as d')
      .selectAll('d')
      .where('d.state', '=', 'pending')
      .where('d.next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('d.lease_until', 'is', null), eb('d.lease_until', '<', now)]))
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('webhook_deliveries as e')
              .select(sql`1`.as('one'))
              .whereRef('e.endpoint_id', '=', 'd.endpoint_id')
              .whereRef('e.context_id', '=', 'd.context_id')
              .where('e.state', '=', 'pending')
              .whereRef('e.seq', '<', 'd.seq'),
          ),
        ),
      )
      .orderBy('d.seq')
      .limit(limit)
      .execute()) as DeliveryRow[];
  }

  async claimDelivery(seq: number, owner: string, now: number, until: number): Promise<boolean> {
    const res = await this.db
      .updateTable('webhook_deliveries')
      .set({ lease_owner: owner, lease_until: until })
      .where('seq', '=', seq)
      .where('state', '=', 'pending')
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async recordAttempt(seq: number, owner: string, o: AttemptOutcome): Promise<void> {
    await this.db
      .updateTable('webhook_deliveries')
      .set({
        state: o.state,
        attempts: o.attempts,
        next_attempt_at: o.nextAttemptAt,
        lease_owner: null,
        lease_until: null,
        last_attempt_at: o.at,
        last_status: o.status,
        last_error: o.error,
        ...(o.state === 'delivered' ? { delivered_at: o.at } : {}),
      })
      .where('seq', '=', seq)
      .where('lease_owner', '=', owner)
      .execute();
  }

  async allEndpoints(): Promise<EndpointRow[]> {
    return this.db.selectFrom('webhook_endpoints').selectAll().orderBy('id').execute();
  }

  async replaceSecret(id: string, old: Uint8Array, sealed: Uint8Array): Promise<void> {
    await this.db
      .updateTable('webhook_endpoints')
      .set({ secret_enc: sealed })
      .where('id', '=', id)
      .where('secret_enc', '=', old)
      .execute();
  }

  async pruneFinished(before: number): Promise<number> {
    const res = await this.db
      .deleteFrom('webhook_deliveries')
      .where('state', '!=', 'pending')
      .where('created_at', '<', before)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}

export const webhookStore = (db: Db): WebhookStore => new KyselyWebhookStore(db);
