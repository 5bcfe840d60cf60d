import type { AuthContextRecord, AuthResult, AuthStatus } from '@palmid/contracts/api/auth-contexts';
import { TERMINAL_STATUSES } from '@palmid/contracts/api/auth-contexts';
import type { AuthUpdated } from '@palmid/contracts/ws/vendor';
import { h, replace } from '../lib/dom.ts';
import { money, short, valueText, when } from '../lib/format.ts';
import { vendorApi } from './vendor.ts';

interface Row {
  auth_id: string;
  type: string;
  amount: number | null;
  currency: string | null;
  created_at: string | null;
  status: AuthStatus;
  auth_result?: AuthResult;
  updated_at: string;
}

const rows = new Map<string, Row>();
let onLedger: (ledgerId: string) => void = () => undefined;

export function onLedgerLink(fn: (ledgerId: string) => void): void {
  onLedger = fn;
}

export function clearContexts(): void {
  rows.clear();
  render();
}

/** The currency of a context seen in this session (the ledger records amounts without one). */
export function currencyOf(authId: string): string | undefined {
  return rows.get(authId)?.currency ?? undefined;
}

export function unfinished(): string[] {
  return [...rows.values()]
    .filter((r) => !(TERMINAL_STATUSES as readonly string[]).includes(r.status))
    .map((r) => r.auth_id);
}

export function addCreated(rec: AuthContextRecord): void {
  const existing = rows.get(rec.auth_id);
  rows.set(rec.auth_id, {
    auth_id: rec.auth_id,
    type: rec.type,
    amount: rec.amount,
    currency: rec.currency,
    created_at: rec.created_at,
    // a socket update may have overtaken the create response
    status: existing?.status ?? rec.status,
    ...(existing?.auth_result ? { auth_result: existing.auth_result } : {}),
    updated_at: existing?.updated_at ?? rec.created_at,
  });
  render();
}

/** Applies an auth.updated notification (or a subscribe answer); terminal states never go back. */
export function applyUpdate(u: AuthUpdated): void {
  const row = rows.get(u.auth_id);
  const isTerminal = (s: string) => (TERMINAL_STATUSES as readonly string[]).includes(s);
  if (row && isTerminal(row.status) && !isTerminal(u.status)) return;
  const next: Row = {
    auth_id: u.auth_id,
    type: row?.type ?? '—',
    amount: row?.amount ?? null,
    currency: row?.currency ?? null,
    created_at: row?.created_at ?? null,
    status: u.status,
    updated_at: new Date().toISOString(),
    ...(u.auth_result
      ? { auth_result: u.auth_result }
      : row?.auth_result
        ? { auth_result: row.auth_result }
        : {}),
  };
  rows.set(u.auth_id, next);
  render();
  if (!row) void describe(u.auth_id);
  if (row?.status !== u.status) {
    const log = document.getElementById('context-log');
    log?.append(h('p', {}, `Context ${short(u.auth_id)} is now ${u.status}.`));
  }
}

const describing = new Set<string>();

/**
 * A context this tab did not create (made by the vendor's backend, another tab, or tracked by id): its
 * type, amount and currency come from its status (GET /api/v1/auth/{id}/status), asked once.
 */
async function describe(authId: string): Promise<void> {
  if (describing.has(authId)) return;
  describing.add(authId);
  try {
    const { data } = await vendorApi<{
      type?: string;
      amount?: number | null;
      currency?: string | null;
      created_at?: string;
    }>(`/api/v1/auth/${authId}/status`);
    const row = rows.get(authId);
    if (!row || !data.type) return;
    rows.set(authId, {
      ...row,
      type: data.type,
      amount: data.amount ?? null,
      currency: data.currency ?? null,
      created_at: row.created_at ?? data.created_at ?? null,
    });
    render();
  } catch {
    // the row keeps its dashes; the socket still updates its status
  } finally {
    describing.delete(authId);
  }
}

function cancelButton(r: Row) {
  const b = h(
    'button',
    { type: 'button', class: 'link', 'aria-label': `Cancel context ${short(r.auth_id)}` },
    'Cancel',
  );
  b.addEventListener('click', async () => {
    b.disabled = true;
    try {
      // the socket delivers the resulting `cancelled` update like any other change
      await vendorApi(`/api/v1/auth/${r.auth_id}/cancel`, { method: 'POST' });
    } catch (err) {
      b.disabled = false;
      b.after(h('span', { class: 'field-error', role: 'alert' }, ` ${(err as Error).message}`));
    }
  });
  return b;
}

function resultCell(r: Row) {
  const res = r.auth_result;
  if (!res)
    return h(
      'div',
      {},
      h(
        'p',
        { class: 'muted' },
        r.status === 'scanning'
          ? 'waiting for a palm…'
          : r.status === 'pending'
            ? 'waiting for a kiosk…'
            : '—',
      ),
      r.status === 'pending' || r.status === 'scanning' ? cancelButton(r) : null,
    );
  const attrs = Object.entries(res.attributes);
  return h(
    'div',
    {},
    h(
      'p',
      {},
      res.success ? 'Paid by ' : 'Failed',
      res.success
        ? h('code', { title: res.user_id ?? '' }, short(res.user_id ?? ''))
        : res.reason
          ? ` — ${res.reason.replace(/_/g, ' ')}`
          : '',
    ),
    res.missing?.length ? h('p', { class: 'muted' }, `missing consent: ${res.missing.join(', ')}`) : null,
    attrs.length
      ? h('p', { class: 'muted' }, attrs.map(([k, v]) => `${k}: ${valueText(v)}`).join(' · '))
      : null,
    res.ledger_id
      ? (() => {
          const b = h(
            'button',
            { type: 'button', class: 'link', 'aria-label': `Show ledger for context ${short(r.auth_id)}` },
            'Show in ledger',
          );
          b.addEventListener('click', () => onLedger(res.ledger_id!));
          return b;
        })()
      : null,
  );
}

function render(): void {
  const body = document.getElementById('contexts');
  if (!body) return;
  const list = [...rows.values()].sort((a, b) =>
    (b.created_at ?? b.updated_at).localeCompare(a.created_at ?? a.updated_at),
  );
  if (list.length === 0) {
    replace(body, h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No contexts yet in this session.')));
    return;
  }
  replace(
    body,
    list.map((r) =>
      h(
        'tr',
        { 'data-auth-id': r.auth_id },
        h('td', { class: 'nowrap' }, when(r.created_at ?? r.updated_at)),
        h('td', { class: 'nowrap' }, h('code', { title: r.auth_id }, short(r.auth_id))),
        h('td', {}, r.type),
        h('td', { class: 'nowrap' }, money(r.amount, r.currency)),
        h('td', {}, h('span', { class: 'badge', 'data-status': r.status }, r.status)),
        h('td', {}, resultCell(r)),
      ),
    ),
  );
}
