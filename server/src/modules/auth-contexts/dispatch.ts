import type { AppContext } from '../../context.ts';
import { type ContextRow, toRecord } from './service.ts';

/**
 * Announces a new context to the kiosks: the chosen one, or every kiosk serving the vendor. The kiosk
 * link (modules/pvs) listens on the event hub, so with Redis a kiosk on another instance receives it too.
 */
export function dispatchToKiosks(ctx: AppContext, row: ContextRow): void {
  const record = toRecord(row);
  ctx.events.publish('scan.request', {
    vendorId: row.vendor_id,
    pvsId: row.pvs_id,
    authId: row.id,
    context: {
      auth_id: record.auth_id,
      type: record.type,
      amount: record.amount,
      currency: record.currency,
      minimum_age: record.minimum_age,
      expires_at: record.expires_at,
    },
  });
}
