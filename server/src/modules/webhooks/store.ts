import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/schema.ts';

/** The webhook module's tables (migration 0070_webhooks): endpoints and the outbox / delivery log. */

export type EndpointRow = WebhookEndpointsTable;
export type DeliveryRow = Omit<WebhookDeliveriesTable, 'seq'> & { seq: number };

export async function insertEndpoint(db: Db, row: EndpointRow): Promise<void> {
  await db.insertInto('webhook_endpoints').values(row).execute();
}

export async function activeEndpoints(db: Db, vendorId: string): Promise<EndpointRow[]> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('vendor_id', '=', vendorId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at')
    .execute();
}

export async function endpointById(db: Db, id: string): Promise<EndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function markEndpointDeleted(
  db: Db,
  vendorId: string,
  id: string,
  now: number,
): Promise<boolean> {
  const res = await db
    .updateTable('webhook_endpoints')
    .set({ deleted_at: now })
    .where('id', '=', id)
    .where('vendor_id', '=', vendorId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

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

export async function insertDelivery(db: Db, d: NewDelivery): Promise<string> {
  const id = `whd_${randomUUID().replace(/-/g, '')}`;
  await db
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

export async function deliveryById(db: Db, id: string): Promise<DeliveryRow | undefined> {
  return (await db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst()) as
    | DeliveryRow
    | undefined;
}

export async function listDeliveries(
  db: Db,
  vendorId: string,
  opts: { endpointId?: string; contextId?: string; beforeSeq?: number; limit: number },
): Promise<DeliveryRow[]> {
  let q = db.selectFrom('webhook_deliveries').selectAll().where('vendor_id', '=', vendorId);
  if (opts.endpointId) q = q.where('endpoint_id', '=', opts.endpointId);
  if (opts.contextId) q = q.where('context_id', '=', opts.contextId);
  if (opts.beforeSeq !== undefined) q = q.where('seq', '<', opts.beforeSeq);
  return (await q.orderBy('seq', 'desc').limit(opts.limit).execute()) as DeliveryRow[];
}

/**
 * Deliveries a sender may take now: pending, due, not leased (or the lease ran out), and the first
 * pending one of their (endpoint, context), so that the events of one context go out in order.
 */
export async function dueDeliveries(db: Db, now: number, limit: number): Promise<DeliveryRow[]> {
  return (await db
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

/** Takes a delivery for `owner` until `until` (compare-and-set: one sender among all instances wins). */
export async function claimDelivery(
  db: Db,
  seq: number,
  owner: string,
  now: number,
  until: number,
): Promise<boolean> {
  const res = await db
    .updateTable('webhook_deliveries')
    .set({ lease_owner: owner, lease_until: until })
    .where('seq', '=', seq)
    .where('state', '=', 'pending')
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export interface AttemptOutcome {
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: number;
  at: number;
  status: number | null;
  error: string | null;
}

/** Records an attempt of a delivery `owner` holds, and releases it. */
export async function recordAttempt(db: Db, seq: number, owner: string, o: AttemptOutcome): Promise<void> {
  await db
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

export async function allEndpoints(db: Db): Promise<EndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().orderBy('id').execute();
}

export async function replaceSecret(db: Db, id: string, old: Uint8Array, sealed: Uint8Array): Promise<void> {
  await db
    .updateTable('webhook_endpoints')
    .set({ secret_enc: sealed })
    .where('id', '=', id)
    .where('secret_enc', '=', old)
    .execute();
}

/** Drops finished deliveries (delivered or failed) older than `before`; returns how many. */
export async function pruneFinished(db: Db, before: number): Promise<number> {
  const res = await db
    .deleteFrom('webhook_deliveries')
    .where('state', '!=', 'pending')
    .where('created_at', '<', before)
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
