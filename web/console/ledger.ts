import { hex64Schema } from '@palmid/contracts/api/common';
import { ledgerTransactionSchema } from '@palmid/contracts/api/gdpr';
import { h, replace, setFieldError } from '../lib/dom.ts';
import { money, short, valueText, when } from '../lib/format.ts';
import { ApiError } from '../lib/http.ts';
import { currencyOf } from './contexts.ts';
import { vendorApi } from './vendor.ts';

const DAY_S = 86_400;

/** Each element is the hex of UTF-8 JSON (SPEC §2.4); decoded and checked against the shared schema. */
export function decodeTransaction(hex: string) {
  const bytes = new Uint8Array((hex.match(/../g) ?? []).map((b) => Number.parseInt(b, 16)));
  const json: unknown = JSON.parse(new TextDecoder().decode(bytes));
  return ledgerTransactionSchema.parse(json);
}

/**
 * One ledger attribute in words: the payment formatted in its currency (recorded beside it as a
 * `currency` attribute; older transactions have none, then the currency of a context seen in this session
 * is used), the context type alone for an entrance or a login (their ledger context is empty).
 */
function describeAttribute(
  a: { type: string; context?: unknown },
  contextId: string,
  recorded: string | undefined,
): string {
  if (a.type === 'payment' && typeof a.context === 'number') {
    const currency = recorded ?? currencyOf(contextId);
    return currency
      ? `payment of ${money(a.context, currency)}`
      : `payment of ${new Intl.NumberFormat('en-GB').format(a.context)} in the smallest unit (currency not recorded)`;
  }
  if (a.type === 'pseudonym') return `pseudonym ${short(String(a.context ?? ''))}`;
  if (a.context === null || a.context === undefined) return a.type;
  return `${a.type}: ${valueText(a.context)}`;
}

/** A transaction's attributes in words; the currency shows in the payment it belongs to. */
function describeAttributes(attributes: { type: string; context?: unknown }[], contextId: string): string {
  const currency = attributes.find((a) => a.type === 'currency' && typeof a.context === 'string')?.context as
    | string
    | undefined;
  return attributes
    .filter((a) => !(a.type === 'currency' && currency !== undefined))
    .map((a) => describeAttribute(a, contextId, currency))
    .join(' · ');
}

function isoDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}

export function prefillLedger(ledgerId: string): void {
  (document.getElementById('ledger-id') as HTMLInputElement).value = ledgerId;
  const from = document.getElementById('ledger-from') as HTMLInputElement;
  if (!from.value) from.value = isoDay(new Date(Date.now() - DAY_S * 1000));
}

export function wireLedger(): void {
  const form = document.getElementById('ledger-form') as HTMLFormElement;
  const idInput = document.getElementById('ledger-id') as HTMLInputElement;
  const fromInput = document.getElementById('ledger-from') as HTMLInputElement;
  const toInput = document.getElementById('ledger-to') as HTMLInputElement;
  fromInput.value = isoDay(new Date(Date.now() - 30 * DAY_S * 1000));
  const out = document.getElementById('ledger-result')!;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    for (const i of [idInput, fromInput, toInput]) setFieldError(i, null);
    const id = idInput.value.trim().toLowerCase();
    const idCheck = hex64Schema.safeParse(id);
    if (!idCheck.success) {
      setFieldError(idInput, 'A ledger id is 64 hex characters (0–9, a–f).');
      idInput.focus();
      return;
    }
    if (!fromInput.value) {
      setFieldError(fromInput, 'Choose a start date.');
      fromInput.focus();
      return;
    }
    const from = Math.floor(Date.parse(`${fromInput.value}T00:00:00Z`) / 1000);
    const to = toInput.value ? Math.floor(Date.parse(`${toInput.value}T23:59:59Z`) / 1000) : undefined;
    const query = `from=${from}${to !== undefined ? `&to=${to}` : ''}`;
    replace(out, h('p', { class: 'muted', role: 'status' }, 'Looking up…'));
    try {
      const { data } = await vendorApi<{ transactions: string[] }>(
        `/api/v1/ledger/transactions/${id}?${query}`,
        {
          raw: true,
        },
      );
      const txs = data.transactions.map(decodeTransaction);
      replace(
        out,
        h(
          'p',
          { role: 'status' },
          `${txs.length} transaction${txs.length === 1 ? '' : 's'} for ${short(id)}.`,
        ),
        h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { id: 'ledger-table' },
            h('caption', { class: 'sr-only' }, 'Decoded ledger transactions'),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Time', 'Context', 'Attributes', 'Result'].map((c) => h('th', { scope: 'col' }, c)),
              ),
            ),
            h(
              'tbody',
              {},
              txs.map((t) =>
                h(
                  'tr',
                  { 'data-context-id': t['context-id'] },
                  h('td', { class: 'nowrap' }, when(t.timestamp)),
                  h('td', { class: 'nowrap' }, h('code', { title: t['context-id'] }, short(t['context-id']))),
                  h('td', {}, describeAttributes(t.attributes, t['context-id'])),
                  h(
                    'td',
                    {},
                    h('span', { class: t.result.code === 'ok' ? 'badge ok' : 'badge bad' }, t.result.code),
                  ),
                ),
              ),
            ),
          ),
        ),
      );
    } catch (err) {
      const message = err instanceof ApiError ? err.message : 'The ledger could not be read.';
      const target =
        err instanceof ApiError && err.field === 'from'
          ? fromInput
          : err instanceof ApiError && err.field === 'to'
            ? toInput
            : null;
      if (target) setFieldError(target, message);
      else if (err instanceof ApiError && err.status === 404)
        replace(out, h('p', { role: 'status' }, 'No transactions of yours for this ledger id.'));
      else replace(out, h('p', { class: 'field-error', role: 'alert' }, message));
    }
  });
}
