import { randomUUID } from 'node:crypto';
import { AppError } from '@palmid/contracts/errors';
import { WEBHOOK_EVENTS, type WebhookEventType } from '@palmid/contracts/webhooks';
import type { AppContext } from '../../context.ts';
import { open, seal } from '../../crypto/keyring.ts';
import { newSecret } from '../../crypto/secrets.ts';
import type { Db } from '../../db/index.ts';
import { checkWebhookUrl } from './addresses.ts';
import { type DeliveryRow, type EndpointRow, webhookStore } from './store.ts';

/** docs/vendor-api.md, "Webhooks": at most this many endpoints per vendor. */
export const MAX_ENDPOINTS_PER_VENDOR = 16;

type Keyed = Pick<AppContext, 'keyring' | 'now'> & { config: Pick<AppContext['config'], 'PALMID_ENV'> };

const secretKey = (ctx: Pick<AppContext, 'keyring'>) => ctx.keyring.derive('webhook-secrets');

export function endpointSecret(ctx: Pick<AppContext, 'keyring'>, e: EndpointRow): string {
  return open(secretKey(ctx), e.secret_enc, `webhook:${e.id}`).toString('utf8');
}

export interface EndpointView {
  id: string;
  url: string;
  events: WebhookEventType[];
  created_at: string;
}

function view(e: EndpointRow): EndpointView {
  return {
    id: e.id,
    url: e.url,
    events: JSON.parse(e.events) as WebhookEventType[],
    created_at: new Date(Number(e.created_at)).toISOString(),
  };
}

/** Registers an endpoint; the answer holds the signing secret, shown this once. */
export async function createEndpoint(
  ctx: Keyed,
  db: Db,
  vendorId: string,
  input: { url: string; events?: string[] | undefined },
): Promise<EndpointView & { secret: string }> {
  const verdict = checkWebhookUrl(input.url, ctx.config.PALMID_ENV === 'development');
  if (!verdict.ok)
    throw new AppError('INVALID_REQUEST', verdict.message, { field: 'url', reason: verdict.reason });
  const events = [...new Set(input.events ?? WEBHOOK_EVENTS)];
  for (const e of events) {
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(e))
      throw new AppError(
        'INVALID_REQUEST',
        `Unknown event type '${e}' (known: ${WEBHOOK_EVENTS.join(', ')})`,
        {
          field: 'events',
          reason: 'unknown_event',
        },
      );
  }
  if ((await webhookStore(db).activeEndpoints(vendorId)).length >= MAX_ENDPOINTS_PER_VENDOR)
    throw new AppError(
      'INVALID_REQUEST',
      `At most ${MAX_ENDPOINTS_PER_VENDOR} webhook endpoints per vendor`,
      {
        field: 'url',
        reason: 'too_many_endpoints',
      },
    );
  const id = `wh_${randomUUID().replace(/-/g, '')}`;
  const secret = newSecret('whsec_');
  const row: EndpointRow = {
    id,
    vendor_id: vendorId,
    url: verdict.url.toString(),
    events: JSON.stringify(events),
    secret_enc: seal(secretKey(ctx), Buffer.from(secret, 'utf8'), `webhook:${id}`),
    created_at: ctx.now(),
    deleted_at: null,
  };
  await webhookStore(db).insertEndpoint(row);
  endpointCache.delete(vendorId);
  return { ...view(row), secret };
}

export async function listEndpoints(db: Db, vendorId: string): Promise<EndpointView[]> {
  return (await webhookStore(db).activeEndpoints(vendorId)).map(view);
}

export async function deleteEndpoint(db: Db, vendorId: string, id: string, now: number): Promise<void> {
  if (!(await webhookStore(db).markEndpointDeleted(vendorId, id, now)))
    throw new AppError('NOT_FOUND', 'No such webhook endpoint', { field: 'id', reason: 'unknown' });
  endpointCache.delete(vendorId);
}

/**
 * Each vendor's endpoints as read at most a second ago: creating a context costs no query (and, in a group
 * commit, no savepoint) for the vendors without webhooks. Changes made here apply at once; another
 * instance's within a second (docs/vendor-api.md, "Webhooks").
 */
const ENDPOINT_CACHE_MS = 1000;
const endpointCache = new Map<string, { until: number; rows: EndpointRow[] }>();

async function endpointsOf(db: Db, vendorId: string): Promise<EndpointRow[]> {
  const hit = endpointCache.get(vendorId);
  const now = Date.now();
  if (hit && hit.until > now) return hit.rows;
  const rows = await webhookStore(db).activeEndpoints(vendorId);
  if (endpointCache.size > 10_000) endpointCache.clear();
  endpointCache.set(vendorId, { until: now + ENDPOINT_CACHE_MS, rows });
  return rows;
}

/**
 * Puts an event about an auth context into the outbox, one delivery per endpoint of the vendor that takes
 * the type. Called inside the transaction that makes the change, so the event exists exactly when the
 * change does (a crash never loses one, and a rolled-back change sends none).
 */
export async function enqueueContextEvent(
  db: Db,
  e: { vendorId: string; contextId: string; type: WebhookEventType; payload: unknown; at: number },
): Promise<number> {
  const endpoints = (await endpointsOf(db, e.vendorId)).filter((p) =>
    (JSON.parse(p.events) as string[]).includes(e.type),
  );
  if (endpoints.length === 0) return 0;
  const eventId = `evt_${randomUUID().replace(/-/g, '')}`;
  // the event's time travels with it: a replay or a late retry still says when it happened
  const payload = JSON.stringify({ created: e.at, data: e.payload });
  for (const p of endpoints)
    await webhookStore(db).insertDelivery({
      eventId,
      endpointId: p.id,
      vendorId: e.vendorId,
      type: e.type,
      contextId: e.contextId,
      payload,
      createdAt: e.at,
    });
  return endpoints.length;
}

export interface DeliveryView {
  id: string;
  event_id: string;
  endpoint_id: string;
  type: string;
  auth_id: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  created_at: string;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: string | null;
  replay_of: string | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

export function deliveryView(d: DeliveryRow): DeliveryView {
  return {
    id: d.id,
    event_id: d.event_id,
    endpoint_id: d.endpoint_id,
    type: d.type,
    auth_id: d.context_id,
    state: d.state,
    attempts: Number(d.attempts),
    created_at: new Date(Number(d.created_at)).toISOString(),
    next_attempt_at: d.state === 'pending' ? iso(d.next_attempt_at) : null,
    last_attempt_at: iso(d.last_attempt_at),
    last_status: d.last_status === null ? null : Number(d.last_status),
    last_error: d.last_error,
    delivered_at: iso(d.delivered_at),
    replay_of: d.replay_of,
  };
}

export async function deliveryLog(
  db: Db,
  vendorId: string,
  opts: { endpointId?: string; authId?: string; limit: number },
): Promise<DeliveryView[]> {
  const rows = await webhookStore(db).listDeliveries(vendorId, {
    limit: opts.limit,
    ...(opts.endpointId ? { endpointId: opts.endpointId } : {}),
    ...(opts.authId ? { contextId: opts.authId } : {}),
  });
  return rows.map(deliveryView);
}

/**
 * Sends a delivery's event again (same event id, so a receiver that already has it can tell): a new
 * delivery to the same endpoint, due now, after the context's other pending events.
 */
export async function replayDelivery(
  db: Db,
  vendorId: string,
  id: string,
  now: number,
): Promise<DeliveryView> {
  const d = await webhookStore(db).deliveryById(id);
  if (!d || d.vendor_id !== vendorId)
    throw new AppError('NOT_FOUND', 'No such webhook delivery', { field: 'id', reason: 'unknown' });
  const endpoint = await webhookStore(db).endpointById(d.endpoint_id);
  if (!endpoint || endpoint.deleted_at !== null)
    throw new AppError('INVALID_REQUEST', 'The endpoint of this delivery was deleted', {
      field: 'id',
      reason: 'endpoint_deleted',
    });
  const newId = await webhookStore(db).insertDelivery({
    eventId: d.event_id,
    endpointId: d.endpoint_id,
    vendorId,
    type: d.type,
    contextId: d.context_id,
    payload: d.payload,
    createdAt: now,
    replayOf: d.id,
  });
  return deliveryView((await webhookStore(db).deliveryById(newId))!);
}

/**
 * The webhooks' part of a master-key rotation (ops/rotate-master.ts): every endpoint's secret is re-sealed
 * under the new key's sub-key (a compare-and-set on the old ciphertext); secrets the new key already opens
 * are counted as done.
 */
export async function resealSecrets(
  db: Db,
  from: Pick<AppContext, 'keyring'>,
  to: Pick<AppContext, 'keyring'>,
): Promise<{ resealed: number; already: number }> {
  const report = { resealed: 0, already: 0 };
  for (const e of await webhookStore(db).allEndpoints()) {
    let secret: string;
    try {
      endpointSecret(to, e);
      report.already++;
      continue;
    } catch {
      secret = endpointSecret(from, e);
    }
    const sealed = seal(secretKey(to), Buffer.from(secret, 'utf8'), `webhook:${e.id}`);
    await webhookStore(db).replaceSecret(e.id, e.secret_enc, sealed);
    report.resealed++;
  }
  return report;
}

/** docs/vendor-api.md, "Webhooks": the delivery log keeps finished deliveries this long. */
export const DELIVERY_LOG_DAYS = 30;

/** Drops finished deliveries past the log's keep (run by the server's sweep). */
export async function pruneDeliveries(db: Db, now: number): Promise<number> {
  return webhookStore(db).pruneFinished(now - DELIVERY_LOG_DAYS * 86_400_000);
}
