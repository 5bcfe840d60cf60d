import type { Payment } from '@palmid/contracts/api/payments';
import { h, replace } from '../lib/dom.ts';
import { money, when, words } from '../lib/format.ts';
import { userApi, vendorName } from './session.ts';

/** "ok" or the reason a payment failed, in words. */
function outcome(result: string): string {
  return result === 'ok' ? 'Paid' : `Not paid: ${words(result)}`;
}

/** "Your payments": the user's payments from the ledger (GET /v1/payments), newest first. */
export async function renderPayments(): Promise<void> {
  const { data } = await userApi<{ payments: Payment[] }>('/v1/payments?limit=100');
  const box = document.getElementById('payments')!;
  if (data.payments.length === 0) {
    replace(box, h('p', { class: 'muted' }, 'No payments yet.'));
    return;
  }
  replace(
    box,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { id: 'payments-table' },
        h('caption', { class: 'sr-only' }, 'Your payments, newest first'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['When', 'Shop', 'Amount', 'Result'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h(
          'tbody',
          {},
          data.payments.map((p) =>
            h(
              'tr',
              { 'data-context-id': p.context_id },
              h('td', { class: 'nowrap' }, h('time', { datetime: p.timestamp }, when(p.timestamp))),
              h('td', {}, vendorName(p.vendor_id)),
              h(
                'td',
                { class: 'nowrap' },
                p.currency ? money(p.amount, p.currency) : `${p.amount} (smallest unit)`,
              ),
              h(
                'td',
                {},
                h('span', { class: p.result === 'ok' ? 'badge ok' : 'badge bad' }, outcome(p.result)),
              ),
            ),
          ),
        ),
      ),
    ),
  );
}
