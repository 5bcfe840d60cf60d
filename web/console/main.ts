import type { AuthContextRecord } from '@palmid/contracts/api/auth-contexts';
import { authContextInputSchema } from '@palmid/contracts/api/auth-contexts';
import { uuidSchema } from '@palmid/contracts/api/common';
import { maxAmount } from '@palmid/contracts/money';
import { authUpdatedSchema } from '@palmid/contracts/ws/vendor';
import { announce, formStatus, h, replace, setFieldError } from '../lib/dom.ts';
import { minorDigits, money, when } from '../lib/format.ts';
import { ApiError } from '../lib/http.ts';
import { addCreated, applyUpdate, clearContexts, onLedgerLink, unfinished } from './contexts.ts';
import { prefillLedger, wireLedger } from './ledger.ts';
import { LiveSocket, type LiveState } from './socket.ts';
import { currentKey, onBudget, onKeyRefused, rateBudgets, useKey, vendorApi } from './vendor.ts';

const byId = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

interface Status {
  status: string;
  version: string;
  environment: string;
  uptime_s: number;
  database: { kind: string; ok: boolean };
  pvs: { connected: number };
  vendor: { id: string; name: string; mode: string };
  time: string;
}

const STATE_TEXT: Record<LiveState, [string, string]> = {
  connecting: ['connecting…', 'pending'],
  live: ['live', 'completed'],
  reconnecting: ['reconnecting…', 'pending'],
  closed: ['offline', 'cancelled'],
  refused: ['refused', 'failed'],
};

/** The context the create form last reported; its line goes once the context moves on (the table has it). */
let lastCreated: string | undefined;

function clearCreatedNote(): void {
  lastCreated = undefined;
  byId('create-form').querySelector('.form-status')?.remove();
}

const live = new LiveSocket(
  currentKey,
  (u) => {
    applyUpdate(u);
    if (u.auth_id === lastCreated && u.status !== 'pending') clearCreatedNote();
  },
  (s) => {
    const badge = byId('live-state');
    badge.textContent = STATE_TEXT[s][0];
    badge.dataset.status = STATE_TEXT[s][1];
    badge.dataset.state = s;
  },
  unfinished,
);

function renderBudget(): void {
  const rows = rateBudgets();
  replace(
    byId('budget'),
    rows.length === 0
      ? h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No calls yet.'))
      : rows.map(([name, b]) =>
          h(
            'tr',
            { 'data-bucket': name },
            h('th', { scope: 'row' }, name),
            h('td', {}, String(b.remaining)),
            h('td', {}, `${b.limit}`),
            h('td', {}, b.resetAt.toLocaleTimeString('en-GB')),
          ),
        ),
  );
}

async function loadStatus(): Promise<Status> {
  const { data } = await vendorApi<Status>('/api/v1/status');
  replace(
    byId('status'),
    h('dt', {}, 'Vendor'),
    h('dd', { id: 'vendor-name' }, data.vendor.name),
    h('dt', {}, 'Environment'),
    h('dd', {}, `${data.environment} (${data.vendor.mode} key)`),
    h('dt', {}, 'Service'),
    h(
      'dd',
      {},
      h('span', { class: data.status === 'ok' ? 'badge ok' : 'badge bad' }, data.status),
      ` version ${data.version}`,
    ),
    h('dt', {}, 'Connected kiosks'),
    h('dd', { id: 'kiosks' }, String(data.pvs.connected)),
    h('dt', {}, 'Checked'),
    h('dd', {}, when(data.time)),
  );
  byId('who').textContent = data.vendor.name;
  return data;
}

let statusTimer: ReturnType<typeof setInterval> | undefined;

function signOut(message: string | null): void {
  live.stop();
  useKey(null);
  clearInterval(statusTimer);
  clearContexts();
  replace(byId('status'));
  replace(byId('ledger-result'));
  renderBudget();
  byId('app').hidden = true;
  byId('sign-out').hidden = true;
  byId('sign-in').hidden = false;
  byId('who').textContent = '';
  const n = byId('notice');
  n.hidden = !message;
  n.className = 'notice';
  n.textContent = message ?? '';
}

function wireSignIn(): void {
  byId<HTMLFormElement>('key-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = byId<HTMLInputElement>('api-key');
    const key = input.value.trim();
    input.value = ''; // the field is not a place to keep it either
    if (!/^sk_(test|live)_[A-Za-z0-9_-]+$/.test(key)) {
      setFieldError(input, 'An API key starts with sk_test_ or sk_live_.');
      input.focus();
      return;
    }
    useKey(key);
    try {
      await loadStatus();
    } catch (err) {
      useKey(null);
      setFieldError(
        input,
        err instanceof ApiError && err.status === 401
          ? 'This key was not accepted (wrong, revoked, or for another environment).'
          : err instanceof ApiError
            ? err.message
            : 'Could not sign in.',
      );
      input.focus();
      return;
    }
    setFieldError(input, null);
    byId('notice').hidden = true;
    byId('sign-in').hidden = true;
    byId('app').hidden = false;
    byId('sign-out').hidden = false;
    live.start();
    statusTimer = setInterval(() => void loadStatus().catch(() => undefined), 15_000);
    byId('app-title').focus();
    announce('Signed in.');
  });
  byId('sign-out').addEventListener('click', () => {
    signOut('Signed out. The key was forgotten by this tab.');
    byId('main').focus();
  });
  byId('refresh-status').addEventListener('click', () => {
    void loadStatus().catch((err: unknown) =>
      formStatus(byId('status').parentElement!, String((err as Error).message), 'error'),
    );
  });
}

const FIELDS: Record<string, string> = {
  amount: 'amount',
  currency: 'currency',
  attributes_optional: 'optional-attributes',
};

/** What the typed amount means in the chosen currency (amounts are in the currency's smallest unit). */
function renderAmountHint(): void {
  const amount = byId<HTMLInputElement>('amount').value.trim();
  const currency = byId<HTMLInputElement>('currency').value.trim().toUpperCase();
  const hint = byId('amount-hint');
  const digits = minorDigits(currency);
  if (digits === undefined) {
    hint.textContent = /^[A-Z]{3}$/.test(currency)
      ? `${currency} is not an ISO 4217 currency code the API takes; try EUR, USD, GBP, JPY…`
      : 'Enter a three-letter currency code (ISO 4217) such as EUR to see the amount.';
    return;
  }
  if (/^\d+$/.test(amount) && Number(amount) > maxAmount(currency)) {
    hint.textContent = `At most ${money(maxAmount(currency), currency)} (${maxAmount(currency)}) in ${currency}.`;
    return;
  }
  const unit =
    digits === 0
      ? `${currency} has no minor unit`
      : `amounts are in the smallest unit of ${currency}, 1/${10 ** digits}`;
  if (!/^\d+$/.test(amount) || Number(amount) < 1) {
    hint.textContent = `${unit[0]!.toUpperCase()}${unit.slice(1)}.`;
    return;
  }
  hint.textContent = `${amount} is ${money(Number(amount), currency)} (${unit}).`;
}

function wireCreate(): void {
  const form = byId<HTMLFormElement>('create-form');
  for (const id of ['amount', 'currency']) byId(id).addEventListener('input', renderAmountHint);
  form.addEventListener('input', () => {
    if (lastCreated) clearCreatedNote();
  });
  renderAmountHint();
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    for (const id of Object.values(FIELDS)) setFieldError(byId(id), null);
    const optional = byId<HTMLInputElement>('optional-attributes')
      .value.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const input = {
      type: 'payment' as const,
      amount: Number(byId<HTMLInputElement>('amount').value),
      currency: byId<HTMLInputElement>('currency').value.trim().toUpperCase(),
      ...(optional.length ? { attributes_optional: optional } : {}),
    };
    const checked = authContextInputSchema.safeParse(input);
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      const field = String(issue.path[0]);
      const target = byId(FIELDS[field] ?? 'amount');
      const friendly: Record<string, string> = {
        amount: "Enter a whole number in the currency's smallest unit (cents for EUR), at least 1.",
        currency: 'Enter a three-letter ISO 4217 code such as EUR.',
      };
      setFieldError(target, friendly[field] ?? issue.message);
      target.focus();
      return;
    }
    try {
      const { data } = await vendorApi<AuthContextRecord>('/api/v1/auth/create', {
        method: 'POST',
        body: { auth_context: checked.data },
      });
      addCreated(data);
      formStatus(form, `Created context ${data.auth_id.slice(0, 8)}…; its status is in the table.`);
      lastCreated = data.auth_id;
    } catch (err) {
      const field = err instanceof ApiError ? err.field?.split('.').pop() : undefined;
      const target = field ? document.getElementById(FIELDS[field] ?? '') : null;
      const message = err instanceof ApiError ? err.message : 'Could not create the context.';
      if (target) setFieldError(target, message);
      else formStatus(form, message, 'error');
    }
  });

  const track = byId<HTMLFormElement>('track-form');
  track.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = byId<HTMLInputElement>('track-id');
    setFieldError(input, null);
    const id = input.value.trim();
    if (!uuidSchema.safeParse(id).success) {
      setFieldError(input, 'A context id is a UUID, e.g. 1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b.');
      input.focus();
      return;
    }
    try {
      const result = authUpdatedSchema.parse(await live.request('subscribe', { auth_id: id }));
      applyUpdate(result);
      input.value = '';
    } catch (err) {
      setFieldError(input, (err as Error).message);
    }
  });
}

onBudget(renderBudget);
onKeyRefused(() => {
  if (byId('app').hidden) return; // a wrong key on the sign-in form is reported there
  signOut('The API key is no longer accepted (revoked or rotated). Sign in again.');
  byId('main').focus();
});
onLedgerLink((ledgerId) => {
  prefillLedger(ledgerId);
  byId<HTMLFormElement>('ledger-form').requestSubmit();
  byId('ledger-title').scrollIntoView();
});
wireSignIn();
wireCreate();
wireLedger();
renderBudget();
document.documentElement.dataset.ready = 'console';
